import { AppError } from '../http/index.ts';

/** How many distinct pictures one instance fetches from authors' PDSes at once; more wait for a later ask. */
export const AVATAR_FETCHES = 8;
/** The avatar bytes kept in memory (the CID names the content, so an entry never goes stale). */
export const AVATAR_CACHE_BYTES = 8_000_000;

/**
 * The reader's avatar bytes by CID: kept least-recently-used within a byte bound, fetched once however many ask
 * at the same moment, and at most AVATAR_FETCHES fetches in flight for the whole instance — each is bounded in
 * time and bytes, but a crowd asking for many different pictures at once must not open as many connections to
 * servers we do not run.
 */
export class AvatarCache {
  private readonly kept = new Map<string, Uint8Array>();
  private keptBytes = 0;
  private readonly inFlight = new Map<string, Promise<Uint8Array | null>>();

  constructor(private readonly limits = { fetches: AVATAR_FETCHES, bytes: AVATAR_CACHE_BYTES }) {}

  async get(cid: string, fetchIt: () => Promise<Uint8Array | null>): Promise<Uint8Array | null> {
    const hit = this.kept.get(cid);
    if (hit) {
      // Least recently used first out: a hit moves to the end.
      this.kept.delete(cid);
      this.kept.set(cid, hit);
      return hit;
    }
    const pending = this.inFlight.get(cid);
    if (pending) return pending;
    if (this.inFlight.size >= this.limits.fetches)
      throw new AppError(
        'BUSY',
        'Too many pictures are being fetched right now. Try again in a few seconds.',
        {
          status: 503,
          retryAfter: 5,
        },
      );
    const fetching = fetchIt()
      .then((bytes) => {
        if (bytes) this.keep(cid, bytes);
        return bytes;
      })
      .finally(() => this.inFlight.delete(cid));
    this.inFlight.set(cid, fetching);
    return fetching;
  }

  private keep(cid: string, bytes: Uint8Array) {
    if (bytes.length > this.limits.bytes) return;
    this.kept.set(cid, bytes);
    this.keptBytes += bytes.length;
    for (const [k, v] of this.kept) {
      if (this.keptBytes <= this.limits.bytes) break;
      this.kept.delete(k);
      this.keptBytes -= v.length;
    }
  }

  /** What is held, for tests and metrics. */
  get size(): { kept: number; bytes: number; inFlight: number } {
    return { kept: this.kept.size, bytes: this.keptBytes, inFlight: this.inFlight.size };
  }
}
