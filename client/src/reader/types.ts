// The reader pages' data: the server's answers (src/wire/reader.ts), as types only — the reading pages' bundle
// carries no zod, so its live refresh (reader.tsx) reads the answer as the contract's type without decoding.
import type { SessionItem, ThreadView } from '../../../src/wire/index.ts';

export type ThreadData = ThreadView;
export type { SessionItem };

/** What a server-rendered page hands its script, to hydrate the same tree. */
export type ReaderData =
  | { page: 'thread'; actor: string; rkey: string; thread: ThreadData }
  | { page: 'list'; actor: string | null; sessions: SessionItem[] };
