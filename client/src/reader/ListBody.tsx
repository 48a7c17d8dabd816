// Rendered on the server too, where tsx compiles it by the root tsconfig (which covers only src/, test/ and
// scripts/): this pragma gives it the automatic JSX runtime there (test/web/ssrRuntime.test.ts checks).
/** @jsxRuntime automatic @jsxImportSource react */
import type { SessionItem } from './types.ts';

/** Published threads: the most recent from everyone, or one author's — plain links, the same on both sides. */
export function ListBody({ actor, sessions }: { actor: string | null; sessions: SessionItem[] }) {
  return (
    <>
      <h1>{actor ? `Conversations published by ${actor}` : 'Recently published conversations'}</h1>
      <ul className="conversation-list">
        {sessions.map((s) => {
          const who = s.author.handle ?? s.author.did;
          return (
            <li key={s.uri}>
              <a className="title" href={`/profile/${who}/thread/${s.uri.split('/').pop()}`}>
                {s.record.title ?? 'Untitled'}
              </a>
              <span className="meta">
                <a href={`/profile/${who}`}>@{who}</a> · {s.turns} turns
                {s.record.agents?.length ? ` · with ${s.record.agents.map((a) => a.name).join(', ')}` : ''}
              </span>
            </li>
          );
        })}
      </ul>
      {sessions.length === 0 && <p className="empty">Nothing published here yet.</p>}
    </>
  );
}
