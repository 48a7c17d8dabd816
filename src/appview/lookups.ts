import { FairSlots, type FairSlotsPolicy } from '../slots/index.ts';
import type { Network } from './network.ts';

/**
 * Lookups a thread read makes on the network (refs and mentions), bounded: at most `MAX_LOOKUPS` of each per
 * read, a few at a time, and remembered for a while, so a thread with 500 refs (or a page read twice, HTML
 * then API) cannot turn one anonymous request into hundreds of outbound ones. Across reads, every lookup in
 * flight holds one of the process's places, shared fairly between readers (by address): many reads at once from
 * one reader wait behind each other, not in front of another reader's, and a lookup that finds no place within a
 * moment is not made (its ref shows as unchecked, and is looked up again at a later read).
 */
const MAX_LOOKUPS = 40;
const AT_ONCE = 8;
const KEPT = 5000;

/** The process's places for lookups in flight (ADR 0106). */
export const LOOKUP_PLACES: FairSlotsPolicy & { waitMs: number } = {
  capacity: 32,
  perPlayer: 16,
  reserve: 8,
  queuePerPlayer: 64,
  queueTotal: 512,
  waitMs: 2_000,
};
const placesFor = (o: typeof LOOKUP_PLACES) =>
  new FairSlots({
    ...o,
    queueFullStatus: 503,
    // Each lookup's fetches have their own time limits; the place goes back past this whatever happens.
    holdMs: 30_000,
    messages: { queueFull: 'busy', busy: 'busy' },
  });
let places = placesFor(LOOKUP_PLACES);
/** For tests: a pool of other sizes. */
export const setLookupPlaces = (o: typeof LOOKUP_PLACES) => {
  places = placesFor(o);
};

/** A lookup that found no place: not made, and not remembered (a later read tries again). */
class NotLookedUp extends Error {}

async function inPlace<T>(reader: string, work: () => Promise<T>): Promise<T> {
  const place = await places.acquire(reader).catch(() => {
    throw new NotLookedUp();
  });
  try {
    return await work();
  } finally {
    place.release();
  }
}

class Remembered<V> {
  private entries = new Map<string, { at: number; value: Promise<V> }>();
  constructor(private readonly ttlMs: () => number) {}

  get(key: string, load: () => Promise<V>): { value: Promise<V>; fresh: boolean } {
    const hit = this.entries.get(key);
    if (hit && Date.now() - hit.at < this.ttlMs()) return { value: hit.value, fresh: false };
    const value = load();
    this.entries.delete(key);
    this.entries.set(key, { at: Date.now(), value });
    value.catch((e: unknown) => {
      if (e instanceof NotLookedUp && this.entries.get(key)?.value === value) this.entries.delete(key);
    });
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

/** `reader`: who asked (`requesterKey`), for the process's places. */
export const recordNow = (network: Network, uri: string, reader = 'anonymous') =>
  records.get(uri, async () => {
    const now = await inPlace(reader, () => network.record(uri));
    if (!now) return null;
    const text = (now.value as { text?: unknown } | undefined)?.text;
    // A quote, not the record: what a reader is shown, and all that is kept (a hostile PDS may send megabytes).
    // Twice what is shown: a thread's cover is applied before the quote is cut (thread.ts), so a covered word
    // across the cut is still found whole.
    return { cid: now.cid, text: typeof text === 'string' ? text.slice(0, 2 * QUOTE_CHARS) : null };
  });

export const handleNow = (network: Network, did: string, reader = 'anonymous') =>
  handles.get(did, async () => (await inPlace(reader, () => network.identity(did)))?.handle ?? null);
