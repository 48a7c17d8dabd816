import { AppError } from '../http/index.ts';

/** How many pictures one instance fetches from authors' PDSes at once; more wait for a later ask. */
export const AVATAR_FETCHES = 8;
/** …and how many of those one author's may be: a slow PDS of their own must not hold every fetch. */
export const AVATAR_FETCHES_PER_AUTHOR = 2;
/** …and how many one reader's asks may have started: a reader asking for many authors' pictures leaves the rest
 * to other readers… */
export const AVATAR_FETCHES_PER_READER = 4;
/** …of which this many are started only for a reader with none in flight: two readers (two address blocks) at
 * their share do not hold every fetch; each further reader still gets one while one is free. */
export const AVATAR_FETCHES_KEPT = 2;
/** The avatar bytes kept in memory (the CID names the content, so an entry never goes stale). */
export const AVATAR_CACHE_BYTES = 8_000_000;
/** A picture that could not be fetched is not asked for again for this long (its author's PDS is down or slow). */
export const AVATAR_RETRY_MS = 60_000;
const FAILURES_KEPT = 1000;

/** What a record says of a picture: the bytes must be these (their hash is checked by the fetch). */
export interface AvatarRef {
  cid: string;
  mimeType: string;
  size: number;
}

interface Kept {
  bytes: Uint8Array;
  mimeType: string;
}

const BUSY = () =>
  new AppError('BUSY', 'Too many pictures are being fetched right now. Try again in a few seconds.', {
    status: 503,
    retryAfter: 5,
  });

/**
 * The reader's avatar bytes: kept by CID, least recently used out first, within a byte bound; fetched once for
 * however many ask at the same moment; at most AVATAR_FETCHES fetches in flight for the instance,
 * AVATAR_FETCHES_PER_AUTHOR for one author and AVATAR_FETCHES_PER_READER started by one reader, the last
 * AVATAR_FETCHES_KEPT only for a reader with none in flight (each fetch is
 * bounded in time and bytes, but a crowd asking for many pictures, one reader asking for the pictures of many
 * stalling PDSes, or one author's stalling PDS, must not take every connection); a failure remembered for a
 * minute.
 *
 * A fetch in flight is shared only by asks for the same author and CID: another author's record may name the same
 * CID with their own stalling PDS behind it. Kept bytes (hash-checked, so the CID's true content) are served to an
 * ask whose record declares the same type and size; any other ask fetches for itself.
 */
export class AvatarCache {
  private readonly kept = new Map<string, Kept>();
  private keptBytes = 0;
  private readonly inFlight = new Map<string, Promise<Uint8Array | null>>();
  private readonly byAuthor = new Map<string, number>();
  private readonly byReader = new Map<string, number>();
  private readonly failed = new Map<string, number>();

  constructor(
    private readonly limits = {
      fetches: AVATAR_FETCHES,
      perAuthor: AVATAR_FETCHES_PER_AUTHOR,
      perReader: AVATAR_FETCHES_PER_READER,
      kept: AVATAR_FETCHES_KEPT,
      bytes: AVATAR_CACHE_BYTES,
      retryMs: AVATAR_RETRY_MS,
    },
    private readonly now: () => number = Date.now,
  ) {}

  async get(
    did: string,
    ref: AvatarRef,
    fetchIt: () => Promise<Uint8Array | null>,
    /**
     * Who asked (`requesterKey`): a fetch counts against the reader that started it until it ends (its reader may
     * have gone); joining one is free.
     */
    reader: string,
  ): Promise<Uint8Array | null> {
    const hit = this.kept.get(ref.cid);
    if (hit && hit.mimeType === ref.mimeType && hit.bytes.length === ref.size) {
      this.kept.delete(ref.cid);
      this.kept.set(ref.cid, hit);
      return hit.bytes;
    }
    const key = `${did}\n${ref.cid}`;
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const failedAt = this.failed.get(key);
    if (failedAt !== undefined && this.now() - failedAt < this.limits.retryMs) return null;
    const authors = this.byAuthor.get(did) ?? 0;
    const readers = this.byReader.get(reader) ?? 0;
    const room = this.limits.fetches - this.inFlight.size;
    if (room <= 0 || authors >= this.limits.perAuthor || readers >= this.limits.perReader) throw BUSY();
    if (readers > 0 && room <= this.limits.kept) throw BUSY();
    this.byAuthor.set(did, authors + 1);
    this.byReader.set(reader, readers + 1);
    const fetching = started(fetchIt)
      .catch(() => null)
      .then((bytes) => {
        if (bytes) this.keep(ref, bytes);
        else this.fail(key);
        return bytes;
      })
      .finally(() => {
        this.inFlight.delete(key);
        release(this.byAuthor, did);
        release(this.byReader, reader);
      });
    this.inFlight.set(key, fetching);
    return fetching;
  }

  private keep(ref: AvatarRef, bytes: Uint8Array) {
    if (bytes.length > this.limits.bytes) return;
    const old = this.kept.get(ref.cid);
    if (old) this.keptBytes -= old.bytes.length;
    this.kept.delete(ref.cid);
    this.kept.set(ref.cid, { bytes, mimeType: ref.mimeType });
    this.keptBytes += bytes.length;
    for (const [k, v] of this.kept) {
      if (this.keptBytes <= this.limits.bytes) break;
      this.kept.delete(k);
      this.keptBytes -= v.bytes.length;
    }
  }

  private fail(key: string) {
    this.failed.delete(key);
    this.failed.set(key, this.now());
    if (this.failed.size > FAILURES_KEPT) this.failed.delete(this.failed.keys().next().value!);
  }

  /** What is held, for tests and metrics. */
  get size(): { kept: number; bytes: number; inFlight: number } {
    return { kept: this.kept.size, bytes: this.keptBytes, inFlight: this.inFlight.size };
  }
}

/** One fewer counted against `key`, forgotten at none. */
function release(counts: Map<string, number>, key: string) {
  const left = (counts.get(key) ?? 1) - 1;
  if (left) counts.set(key, left);
  else counts.delete(key);
}

/** `fetchIt()` at once, a throw as a rejection: a fetch that throws before it starts gives its places back too. */
function started<T>(fetchIt: () => Promise<T>): Promise<T> {
  try {
    return fetchIt();
  } catch (e) {
    return Promise.reject(e);
  }
}
