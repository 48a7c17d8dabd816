/**
 * How a reading page splits a thread: each page renders its turns' Markdown on the server, so a page holds a
 * bounded amount of it. A thread may hold 5,000 turns and 16 MiB; rendered whole, its page took the server's
 * event loop for seconds. The split is the server's, from the turns' text lengths alone: it renders one page, and
 * the reader's API answers one page to the script that keeps it up to date (`?page=N`).
 */
export const THREAD_PAGE = {
  /** Turns on a page. */
  turns: 100,
  /** Characters of turn text on a page (a single longer turn has a page of its own). */
  chars: 100_000,
} as const;

/** Where a page of a thread starts and ends among its turns, and which of how many it is (1-based). */
export interface ThreadWindow {
  page: number;
  pages: number;
  /** The index of the page's first turn, and one past its last. */
  first: number;
  end: number;
  /** Turns in the whole thread. */
  total: number;
}

/** The thread's pages, in order, as [first, end) ranges of its turns: each as full as the bounds allow. */
export function threadPages(
  lengths: readonly number[],
  bounds: { turns: number; chars: number } = THREAD_PAGE,
): [number, number][] {
  const pages: [number, number][] = [];
  let first = 0;
  let chars = 0;
  for (let i = 0; i < lengths.length; i++) {
    const full = i - first >= bounds.turns || chars + lengths[i]! > bounds.chars;
    if (full && i > first) {
      pages.push([first, i]);
      first = i;
      chars = 0;
    }
    chars += lengths[i]!;
  }
  if (lengths.length > first || pages.length === 0) pages.push([first, lengths.length]);
  return pages;
}

/** Page `page` (1-based) of a thread whose turns have these text lengths; null when it has no such page. */
export function threadWindow(lengths: readonly number[], page: number): ThreadWindow | null {
  const pages = threadPages(lengths);
  const range = pages[page - 1];
  if (!range) return null;
  return { page, pages: pages.length, first: range[0], end: range[1], total: lengths.length };
}

/**
 * Page `page` of a thread: the thread with that page's turns only, and where they are; null when it has no such
 * page. A turn's length is its text's (none, a hole: 0).
 */
export function pageOfThread<T extends { messages: readonly { record: { text?: unknown } }[] }>(
  thread: T,
  page: number,
): { thread: T; window: ThreadWindow } | null {
  const lengths = thread.messages.map((m) => (typeof m.record.text === 'string' ? m.record.text.length : 0));
  const window = threadWindow(lengths, page);
  if (!window) return null;
  return { thread: { ...thread, messages: thread.messages.slice(window.first, window.end) }, window };
}
