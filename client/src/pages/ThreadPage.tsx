import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams, useSearchParams } from 'react-router';
import type { z } from 'zod';
import { ThreadResponse } from '../../../src/wire/index.ts';
import { ApiError, fetchAs } from '../api.ts';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { ReaderHeader } from '../components/ReaderHeader.tsx';
import { ThreadBody } from '../reader/ThreadBody.tsx';
import { missingOf, Unpublished } from '../reader/Unpublished.tsx';
import { useDocumentTitle } from '../title.ts';

export { speakerOf } from '../reader/ThreadBody.tsx';

type ThreadResponseData = z.output<typeof ThreadResponse>;

/** A 404 from the reader's API (the thread, or its page, stopped being published): what is missing. */
const goneOf = (error: unknown) =>
  error instanceof ApiError && error.status === 404 ? missingOf(error.details) : null;

/**
 * A published thread inside the Player's app (a link followed within it). A thread's own address is served by
 * the server, rendered, with the reader's bundle (reader.tsx); both show ThreadBody.
 */
export function ThreadPage() {
  const { actor, rkey } = useParams() as { actor: string; rkey: string };
  // A page of the thread at a time, as the server's reading page (its links to the others are plain links).
  const page = useSearchParams()[0].get('page') ?? '1';
  const queryKey = ['thread', actor, rkey, page];
  const client = useQueryClient();
  const thread = useQuery({
    queryKey,
    // Asked again by its author's DID once known: a handle that failed to resolve once would read as "gone".
    queryFn: () =>
      fetchAs(
        ThreadResponse,
        `/api/reader/threads/${encodeURIComponent(client.getQueryData<ThreadResponseData>(queryKey)?.thread.author.did ?? actor)}/${rkey}?page=${encodeURIComponent(page)}`,
        // Past the browser's copy (the answer may be kept 15 s), or two polls in three would show nothing new.
        { cache: 'no-cache' },
      ),
    // A thread published live grows while it is read: its page asked again every 5 s while the tab is shown, until
    // it is found gone.
    refetchInterval: (query) => (goneOf(query.state.error) ? false : 5000),
  });
  // Gone since it was shown (a first read's 404 is said as the server says it).
  const missing = thread.data ? goneOf(thread.error) : null;
  useDocumentTitle(
    missing ? 'No longer published' : (thread.data?.thread.session.title ?? 'A published conversation'),
  );
  return (
    <main className="reader" id="main">
      <ReaderHeader />
      {missing ? (
        <Unpublished missing={missing} firstPage={`/profile/${encodeURIComponent(actor)}/thread/${rkey}`} />
      ) : thread.data ? (
        <ThreadBody t={thread.data.thread} window={thread.data.window} />
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
