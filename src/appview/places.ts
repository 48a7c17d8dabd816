import { AppError } from '../http/index.ts';
import { FairSlots } from '../slots/index.ts';

/** Longest a large thread's read or parse waits for its place. */
export const LARGE_WAIT_MS = 10_000;

/**
 * A pool of places for large threads' work (ADR 0089): `atOnce` at once, one author's at a time (keyed by the
 * author's DID), at most 8 of one author's and `waiting` in all waiting (whoever the authors: DIDs cost an attacker
 * little), for `LARGE_WAIT_MS` at most. Every refusal is 503 BUSY: the reader who asked exceeded nothing.
 */
export function largeThreadPlaces(o: { atOnce: number; waiting: number; holdMs: number }): FairSlots {
  return new FairSlots({
    capacity: o.atOnce,
    perPlayer: 1,
    reserve: 0,
    queuePerPlayer: 8,
    queueTotal: o.waiting,
    queueFullStatus: 503,
    waitMs: LARGE_WAIT_MS,
    holdMs: o.holdMs,
    messages: {
      queueFull:
        "Many of this author's long conversations are being read right now. Try again in a few seconds.",
      busy: BUSY_MESSAGE,
    },
  });
}

const BUSY_MESSAGE = 'Many long conversations are being read right now. Try again in a few seconds.';

/** A large thread's read or parse that ran out of time in its place: said as the server being busy. */
export const busyReading = () => new AppError('BUSY', BUSY_MESSAGE, { retryAfter: 5, status: 503 });
