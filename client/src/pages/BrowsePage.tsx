import { useInfiniteQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { ListSessionsResponse } from '../../../src/wire/index.ts';
import { fetchAs } from '../api.ts';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { ReaderHeader } from '../components/ReaderHeader.tsx';
import { useDocumentTitle } from '../title.ts';

/** Published threads: the most recent from everyone, or one author's. Readers need no account. */
export function BrowsePage() {
  const { actor } = useParams();
  useDocumentTitle(actor ? `Published by ${actor}` : 'Published conversations');
  const list = useInfiniteQuery({
    queryKey: ['sessions', actor ?? ''],
    queryFn: ({ pageParam }) =>
      fetchAs(
        ListSessionsResponse,
        `/xrpc/click.aligned.chat.listSessions?${new URLSearchParams({
          limit: '30',
          ...(actor ? { actor } : {}),
          ...(pageParam ? { cursor: pageParam } : {}),
        })}`,
      ),
    initialPageParam: '',
    getNextPageParam: (last) => last.cursor,
  });
  const sessions = list.data?.pages.flatMap((p) => p.sessions) ?? [];
  return (
    <main className="reader" id="main">
      <ReaderHeader />
      <h1>{actor ? `Conversations published by ${actor}` : 'Recently published conversations'}</h1>
      {list.isPending && <p className="loading">{actor ? `Reading ${actor}'s repository…` : 'Loading…'}</p>}
      <ErrorNote error={list.error} />
      <ul className="conversation-list">
        {sessions.map((s) => {
          const who = s.author.handle ?? s.author.did;
          return (
            <li key={s.uri}>
              <Link className="title" to={`/profile/${who}/thread/${s.uri.split('/').pop()}`}>
                {s.record.title ?? 'Untitled'}
              </Link>
              <span className="meta">
                <Link to={`/profile/${who}`}>@{who}</Link> · {s.turns} turns
                {s.record.agents?.length ? ` · with ${s.record.agents.map((a) => a.name).join(', ')}` : ''}
              </span>
            </li>
          );
        })}
      </ul>
      {list.data && sessions.length === 0 && <p className="empty">Nothing published here yet.</p>}
      {list.hasNextPage && (
        <button type="button" className="secondary" onClick={() => list.fetchNextPage()}>
          More
        </button>
      )}
    </main>
  );
}
