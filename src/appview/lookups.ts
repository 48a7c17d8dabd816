import type { Network } from './network.ts';

/**
 * Lookups a thread read makes on the network (refs and mentions), bounded: at most `MAX_LOOKUPS` of each per
 * read, a few at a time, and remembered for a while, so a thread with 500 refs (or a page read twice, HTML
 * then API) cannot turn one anonymous request into hundreds of outbound ones.
 */
const MAX_LOOKUPS = 40;
const AT_ONCE = 8;
const KEPT = 5000;

class Remembered<V> {
  private entries = new Map<string, { at: number; value: Promise<V> }>();
  constructor(private readonly ttlMs: () => number) {}

  get(key: string, load: () => Promise<V>): { value: Promise<V>; fresh: boolean } {
    const hit = this.entries.get(key);
    if (hit && Date.now() - hit.at < this.ttlMs()) return { value: hit.value, fresh: false };
    const value = load();
    this.entries.delete(key);
    this.entries.set(key, { at: Date.now(), value });
    if (this.entries.size > KEPT) this.entries.delete(this.entries.keys().next().value!);
    return { value, fresh: true };
  }
}

/** What a reader is shown of a linked record's text, at most. */
export const QUOTE_CHARS = 1000;

export interface RefNow {
  cid: string;
  text: string | null;
}

/** How long a looked-up record or handle is trusted; a record's "changed since" may lag by as much. */
let ttlMs = 10_000;
export const setLookupTtl = (ms: number) => {
  ttlMs = ms;
};
const records = new Remembered<RefNow | null>(() => ttlMs);
const handles = new Remembered<string | null>(() => ttlMs * 30);

/** Runs `fn` over `items` a few at a time, starting at most `max` new lookups; the rest get `skipped`. */
export async function lookUpAll<T, R>(
  items: readonly T[],
  lookup: (item: T) => { value: Promise<R>; fresh: boolean },
  skipped: R,
  max = MAX_LOOKUPS,
): Promise<Map<T, R>> {
  const out = new Map<T, R>();
  let started = 0;
  const unique = [...new Set(items)];
  for (let i = 0; i < unique.length; i += AT_ONCE) {
    await Promise.all(
      unique.slice(i, i + AT_ONCE).map(async (item) => {
        if (started >= max) {
          out.set(item, skipped);
          return;
        }
        const { value, fresh } = lookup(item);
        if (fresh) started++;
        out.set(item, await value.catch(() => skipped));
      }),
    );
  }
  return out;
}

export const recordNow = (network: Network, uri: string) =>
  records.get(uri, async () => {
    const now = await network.record(uri);
    if (!now) return null;
    const text = (now.value as { text?: unknown } | undefined)?.text;
    // A quote, not the record: what a reader is shown, and all that is kept (a hostile PDS may send megabytes).
    // Twice what is shown: a thread's cover is applied before the quote is cut (thread.ts), so a covered word
    // across the cut is still found whole.
    return { cid: now.cid, text: typeof text === 'string' ? text.slice(0, 2 * QUOTE_CHARS) : null };
  });

export const handleNow = (network: Network, did: string) =>
  handles.get(did, async () => (await network.identity(did))?.handle ?? null);
