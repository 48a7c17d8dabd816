import { FairSlots, type FairSlotsPolicy } from '../slots/index.ts';
import type { Network } from './network.ts';
import { untilAborted } from './untilAborted.ts';

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

/**
 * Lookups remembered for a while by key. One not remembered is made in a place of its reader's own, and shared from
 * the moment it starts: a reader whose lookups wait behind its own cannot make another reader's fail, and one
 * started while another reader waited is taken from the cache, not made twice.
 */
class Remembered<V> {
  private entries = new Map<string, { at: number; value: Promise<V> }>();
  constructor(private readonly ttlMs: () => number) {}

  /** The value remembered, or (unless `keptOnly`) one looked up now; null when only kept ones are asked for. */
  get(
    key: string,
    reader: string,
    load: () => Promise<V>,
    keptOnly = false,
  ): { value: Promise<V>; fresh: boolean } | null {
    const hit = this.#hit(key);
    if (hit) return { value: hit, fresh: false };
    return keptOnly ? null : { value: this.#inPlace(key, reader, load), fresh: true };
  }

  #hit(key: string): Promise<V> | undefined {
    const hit = this.entries.get(key);
    return hit && Date.now() - hit.at < this.ttlMs() ? hit.value : undefined;
  }

  async #inPlace(key: string, reader: string, load: () => Promise<V>): Promise<V> {
    const place = await places.acquire(reader).catch(() => {
      throw new NotLookedUp();
    });
    const started = this.#hit(key);
    if (started) {
      place.release();
      return started;
    }
    try {
      // The place is given back at its deadline whatever the lookup does (a handle's DNS lookup has no time limit).
      const value = untilAborted(load(), place.signal);
      this.entries.delete(key);
      this.entries.set(key, { at: Date.now(), value });
      if (this.entries.size > KEPT) this.entries.delete(this.entries.keys().next().value!);
      return await value;
    } finally {
      place.release();
    }
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

/**
 * Runs `lookup` over `items` a few at a time, starting at most `max` new lookups; the rest get `skipped`. Once a
 * lookup found no place, only what is remembered is used (`keptOnly`).
 */
export async function lookUpAll<T, R>(
  items: readonly T[],
  lookup: (item: T, keptOnly: boolean) => { value: Promise<R>; fresh: boolean } | null,
  skipped: R,
  max = MAX_LOOKUPS,
): Promise<Map<T, R>> {
  const out = new Map<T, R>();
  let started = 0;
  let crowded = false;
  const unique = [...new Set(items)];
  for (let i = 0; i < unique.length; i += AT_ONCE) {
    await Promise.all(
      unique.slice(i, i + AT_ONCE).map(async (item) => {
        if (started >= max) {
          out.set(item, skipped);
          return;
        }
        const asked = lookup(item, crowded);
        if (!asked) {
          out.set(item, skipped);
          return;
        }
        const { value, fresh } = asked;
        if (fresh) started++;
        out.set(
          item,
          await value.catch((e: unknown) => {
            // No place came: the rest of this read is not looked up either (it would only wait as long again).
            if (e instanceof NotLookedUp) crowded = true;
            return skipped;
          }),
        );
      }),
    );
  }
  return out;
}

/** `reader`: who asked (`requesterKey`), for the process's places. */
export const recordNow = (network: Network, uri: string, reader: string, keptOnly = false) =>
  records.get(uri, reader, () => quoteOf(network, uri), keptOnly);

async function quoteOf(network: Network, uri: string): Promise<RefNow | null> {
  const now = await network.record(uri);
  if (!now) return null;
  const text = (now.value as { text?: unknown } | undefined)?.text;
  // A quote, not the record: what a reader is shown, and all that is kept (a hostile PDS may send megabytes).
  // Twice what is shown: a thread's cover is applied before the quote is cut (thread.ts), so a covered word
  // across the cut is still found whole.
  return { cid: now.cid, text: typeof text === 'string' ? text.slice(0, 2 * QUOTE_CHARS) : null };
}

export const handleNow = (network: Network, did: string, reader: string, keptOnly = false) =>
  handles.get(did, reader, async () => (await network.identity(did))?.handle ?? null, keptOnly);
