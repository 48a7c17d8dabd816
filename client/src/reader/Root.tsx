// Rendered on the server too, where tsx compiles it by the root tsconfig (which covers only src/, test/ and
// scripts/): this pragma gives it the automatic JSX runtime there (test/web/ssrRuntime.test.ts checks).
/** @jsxRuntime automatic @jsxImportSource react */
import { ListBody } from './ListBody.tsx';
import { ThreadBody } from './ThreadBody.tsx';
import type { ReaderData } from './types.ts';

/** The tree under a reader page's #root: rendered on the server (ssr.tsx), hydrated in the browser (reader.tsx). */
export function ReaderRoot({ data }: { data: ReaderData }) {
  return data.page === 'thread' ? (
    <ThreadBody t={data.thread} pageSize={Number.POSITIVE_INFINITY} window={data.window} />
  ) : (
    <ListBody actor={data.actor} sessions={data.sessions} />
  );
}
