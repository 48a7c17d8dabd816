/**
 * How a reading page splits a thread: each page renders its turns' Markdown on the server and carries their data,
 * so a page holds a bounded amount of both. A thread may hold 5,000 turns and 16 MiB; rendered whole, its page
 * took the server's event loop for seconds. The split is the server's, from the turns' weights alone: it renders
 * one page, and the reader's API answers one page (`?page=N`; the first unless named).
 */
export const THREAD_PAGE = {
  /** Turns on a page. */
  turns: 100,
  /** Characters a page carries, each turn weighed by `turnWeight` (a single heavier turn has a page of its own). */
  chars: 100_000,
} as const;

/** What a ref may add once the reader looks it up: appview/lookups.ts keeps 1,000 characters of its text. */
const REF_QUOTE = 1000;
/** Room for one item's JSON around its strings: its keys and quotes, a state, a handle looked up. */
const ITEM = 96;

const lengthOf = (v: unknown) => (typeof v === 'string' ? v.length : 0);
const listOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/**
 * A turn's weight on a page, in characters: its text, and each tool step, ref and mention with what the reader
 * adds to it (a ref's quoted text, a mention's handle). Weighed by text alone, 100 turns with no text and the
 * most steps, refs and mentions the lexicon allows each filled one page with some 13 MB. Counts string lengths
 * only (nothing is serialised to weigh it): JSON's escapes can make a string's bytes a few times its length.
 */
export function turnWeight(record: {
  text?: unknown;
  steps?: unknown;
  refs?: unknown;
  mentions?: unknown;
}): number {
  let weight = lengthOf(record.text) + ITEM;
  for (const step of listOf(record.steps)) {
    const s = (step ?? {}) as { name?: unknown; summary?: unknown };
    weight += lengthOf(s.name) + lengthOf(s.summary) + ITEM;
  }
  for (const ref of listOf(record.refs)) {
    const r = (ref ?? {}) as { uri?: unknown; cid?: unknown };
    weight += lengthOf(r.uri) + lengthOf(r.cid) + REF_QUOTE + ITEM;
  }
  for (const mention of listOf(record.mentions)) weight += lengthOf(mention) + ITEM;
  return weight;
}

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

/** The thread's pages, in order, as [first, end) ranges of its turns (by weight): each as full as the bounds allow. */
export function threadPages(
  weights: readonly number[],
  bounds: { turns: number; chars: number } = THREAD_PAGE,
): [number, number][] {
  const pages: [number, number][] = [];
  let first = 0;
  let chars = 0;
  for (let i = 0; i < weights.length; i++) {
    const full = i - first >= bounds.turns || chars + weights[i]! > bounds.chars;
    if (full && i > first) {
      pages.push([first, i]);
      first = i;
      chars = 0;
    }
    chars += weights[i]!;
  }
  if (weights.length > first || pages.length === 0) pages.push([first, weights.length]);
  return pages;
}

/** Page `page` (1-based) of a thread whose turns have these weights; null when it has no such page. */
export function threadWindow(weights: readonly number[], page: number): ThreadWindow | null {
  const pages = threadPages(weights);
  const range = pages[page - 1];
  if (!range) return null;
  return { page, pages: pages.length, first: range[0], end: range[1], total: weights.length };
}
