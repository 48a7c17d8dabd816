import { useQuery } from '@tanstack/react-query';
import { useParams } from 'react-router';
import { ThreadResponse } from '../../../src/wire/index.ts';
import { fetchAs } from '../api.ts';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { ReaderHeader } from '../components/ReaderHeader.tsx';
import { ThreadBody } from '../reader/ThreadBody.tsx';
import { useDocumentTitle } from '../title.ts';

export { speakerOf } from '../reader/ThreadBody.tsx';

/**
 * A published thread inside the Player's app (a link followed within it). A thread's own address is served by
 * the server, rendered, with the reader's bundle (reader.tsx); both show ThreadBody.
 */
export function ThreadPage() {
  const { actor, rkey } = useParams() as { actor: string; rkey: string };
  const thread = useQuery({
    queryKey: ['thread', actor, rkey],
    queryFn: () => fetchAs(ThreadResponse, `/api/reader/threads/${encodeURIComponent(actor)}/${rkey}`),
    // A thread published live grows while it is read: asked again every 5 s while the tab is shown.
    refetchInterval: 5000,
  });
  useDocumentTitle(thread.data?.thread.session.title ?? 'A published conversation');
  return (
    <main className="reader" id="main">
      <ReaderHeader />
      {thread.data ? (
        <ThreadBody t={thread.data.thread} />
      ) : thread.error ? (
        <ErrorNote error={thread.error} />
      ) : (
        <p className="loading">
          Loading the thread (reading its author's repository if this server has not seen it)…
        </p>
      )}
    </main>
  );
}
