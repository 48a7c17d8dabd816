import { setImmediate as nextTurn } from 'node:timers/promises';
import { LARGE_THREAD_BYTES } from './fragments.ts';
import { busyReading, largeThreadPlaces } from './places.ts';

/**
 * Where each piece of a thread's answer lies in its bytes: the session's view, then each turn's, as [start, end)
 * offsets, two numbers each. Recorded as the answer is joined from its rows, so it can be parsed a turn at a time.
 */
export type ThreadBounds = Uint32Array;

/** Bytes parsed between two turns of the event loop: about a millisecond or two of JSON.parse. */
const SLICE_BYTES = 256 * 1024;

/** Longest a large parse holds its place: it stops at its next slice after. */
export const PARSE_HOLD_MS = 30_000;
/**
 * Large threads' parses, in places (ADR 0089): each holds its thread's objects as they grow (a few times its bytes),
 * and one that yields lets another start. A repo that publishes many large threads and has them read makes other
 * authors' readers wait for at most one of its parses. A thread of `LARGE_THREAD_BYTES` or less (a few slices) takes
 * none.
 */
export const LARGE_PARSES_AT_ONCE = 2;
/** Parses waiting in all, at most: each holds its thread's bytes (up to 16 MiB), which the cache may not. */
export const LARGE_PARSES_WAITING = 4;
const parses = largeThreadPlaces({
  atOnce: LARGE_PARSES_AT_ONCE,
  waiting: LARGE_PARSES_WAITING,
  holdMs: PARSE_HOLD_MS,
});

/** Parses under way now, and one author's waiting (tests). */
export const parsesNow = (): number => parses.held;
export const parsesWaitingBy = (author: string): number => parses.waitingBy(author);

/**
 * A thread's answer parsed into its session and turns, a turn at a time, letting the event loop turn between
 * slices: a thread may be 16 MiB, which one JSON.parse held the loop for (every other request on the instance
 * waited) on each read of a thread not in the cache. Frozen as it is parsed, in the same slices: a kept thread's
 * objects are shared by every reader. A large one runs in a place of `author`'s; `pause` is the loop's turn (tests
 * count it).
 */
export function parseThread<S, M>(
  author: string,
  body: Buffer,
  bounds: ThreadBounds,
  {
    pause = nextTurn,
    sliceBytes = SLICE_BYTES,
  }: { pause?: () => Promise<unknown>; sliceBytes?: number } = {},
): Promise<{ session: S; messages: M[] }> {
  const parse = async (signal?: AbortSignal) => {
    const pieces: unknown[] = [];
    let since = 0;
    for (let i = 0; 2 * i < bounds.length; i++) {
      const [start, end] = [bounds[2 * i]!, bounds[2 * i + 1]!];
      pieces.push(deepFreeze(JSON.parse(body.toString('utf8', start, end))));
      since += end - start;
      if (since >= sliceBytes) {
        since = 0;
        await pause();
        // Its place's time ran out (the loop is that busy): said as the server being busy, not as its failure.
        if (signal?.aborted) throw busyReading();
      }
    }
    const [session, ...messages] = pieces;
    return Object.freeze({ session: session as S, messages: Object.freeze(messages) as M[] });
  };
  return body.length > LARGE_THREAD_BYTES ? parses.run(author, parse) : parse();
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
