// The reading pages' own entry (a thread, an author's list, the recent list): hydrates the server's HTML and
// keeps a thread published live up to date. It carries none of the Player's app (main.tsx), nor zod (so no
// noEval.ts: nothing here builds a schema).
import { useEffect, useState } from 'react';
import { hydrateRoot } from 'react-dom/client';
import { threadWindow } from '../../src/markdown/index.ts';
import { ReaderRoot } from './reader/Root.tsx';
import type { ReaderData, ThreadData } from './reader/types.ts';
import './styles.css';

/** A thread published live grows while it is read: asked again every 5 s while the tab is shown. */
function LiveReader({ initial }: { initial: ReaderData }) {
  const [data, setData] = useState(initial);
  useEffect(() => {
    if (initial.page !== 'thread') return;
    const url = `/api/reader/threads/${encodeURIComponent(initial.actor)}/${initial.rkey}`;
    const timer = setInterval(async () => {
      if (document.visibilityState !== 'visible') return;
      const res = await fetch(url).catch(() => null);
      if (!res?.ok) return;
      const { thread } = (await res.json()) as { thread: ThreadData };
      // The same page as the server's, of the thread as it is now (a live thread's last page grows).
      const lengths = thread.messages.map((m) => m.record.text?.length ?? 0);
      const window = threadWindow(lengths, initial.window?.page ?? 1);
      if (!window) return;
      setData({
        ...initial,
        thread: { ...thread, messages: thread.messages.slice(window.first, window.end) },
        window,
      });
    }, 5000);
    return () => clearInterval(timer);
  }, [initial]);
  return <ReaderRoot data={data} />;
}

const source = document.getElementById('reader-data');
const root = document.getElementById('root');
if (source?.textContent && root)
  hydrateRoot(root, <LiveReader initial={JSON.parse(source.textContent) as ReaderData} />);
