// The reading pages' own entry (a thread, an author's list, the recent list): hydrates the server's HTML and
// keeps a thread published live up to date. It carries none of the Player's app (main.tsx), nor zod (so no
// noEval.ts: nothing here builds a schema).
import { useEffect, useState } from 'react';
import { hydrateRoot } from 'react-dom/client';
import type { ThreadWindow } from '../../src/markdown/index.ts';
import { ReaderRoot } from './reader/Root.tsx';
import type { ReaderData, ThreadData } from './reader/types.ts';
import { missingOf, Unpublished } from './reader/Unpublished.tsx';
import './styles.css';

/** A thread published live grows while it is read: asked again every 5 s while the tab is shown. */
function LiveReader({ initial }: { initial: ReaderData }) {
  const [data, setData] = useState(initial);
  const [missing, setMissing] = useState<'thread' | 'page' | null>(null);
  useEffect(() => {
    if (initial.page !== 'thread') return;
    // The same page as the server's, of the thread as it is now (a live thread's last page grows). Asked by its
    // author's DID, which needs no lookup: a handle that failed to resolve once would read as "not found".
    const url = `/api/reader/threads/${encodeURIComponent(initial.thread.author.did)}/${initial.rkey}?page=${initial.window?.page ?? 1}`;
    const timer = setInterval(async () => {
      if (document.visibilityState !== 'visible') return;
      // Past the browser's copy (the answer may be kept 15 s), or two polls in three would show nothing new.
      const res = await fetch(url, { cache: 'no-cache' }).catch(() => null);
      // Deleted, unpublished or taken down since it was opened: said in its place, and asked no more.
      if (res?.status === 404) {
        const body = (await res.json().catch(() => null)) as { error?: { details?: unknown } } | null;
        const gone = missingOf(body?.error?.details);
        if (!gone) return;
        setMissing(gone);
        clearInterval(timer);
        return;
      }
      if (!res?.ok) return;
      const { thread, window } = (await res.json()) as { thread: ThreadData; window: ThreadWindow };
      setData({ ...initial, thread, window });
    }, 5000);
    return () => clearInterval(timer);
  }, [initial]);
  useEffect(() => {
    if (missing) document.title = 'No longer published · AgentsVille';
  }, [missing]);
  if (missing && data.page === 'thread')
    return (
      <Unpublished
        missing={missing}
        firstPage={`/profile/${encodeURIComponent(data.actor)}/thread/${data.rkey}`}
      />
    );
  return <ReaderRoot data={data} />;
}

const source = document.getElementById('reader-data');
const root = document.getElementById('root');
if (source?.textContent && root)
  hydrateRoot(root, <LiveReader initial={JSON.parse(source.textContent) as ReaderData} />);
