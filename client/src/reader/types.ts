// The reader pages' data: the server's answers (src/wire/reader.ts), as types only — the reading pages' bundle
// carries no zod, so its live refresh (reader.tsx) reads the answer as the contract's type without decoding.
import type { ThreadWindow } from '../../../src/markdown/index.ts';
import type { SessionItem, ThreadView } from '../../../src/wire/index.ts';

export type ThreadData = ThreadView;
export type { SessionItem };

/** What a server-rendered page hands its script, to hydrate the same tree. */
export type ReaderData =
  /** A thread's page: `thread` holds that page's turns only, `window` says which (src/markdown/pages.ts). */
  | { page: 'thread'; actor: string; rkey: string; thread: ThreadData; window?: ThreadWindow }
  | { page: 'list'; actor: string | null; sessions: SessionItem[] };
