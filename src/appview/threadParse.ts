import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Where each piece of a thread's answer lies in its bytes: the session's view, then each turn's, as [start, end)
 * offsets, two numbers each. Recorded as the answer is joined from its rows, so it can be parsed a turn at a time.
 */
export type ThreadBounds = Uint32Array;

/** Bytes parsed between two turns of the event loop: about a millisecond or two of JSON.parse. */
const SLICE_BYTES = 256 * 1024;

/**
 * A thread's answer parsed into its session and turns, a turn at a time, letting the event loop turn between
 * slices: a thread may be 16 MiB, which one JSON.parse held the loop for (every other request on the instance
 * waited) on each read of a thread not in the cache. Frozen as it is parsed, in the same slices: a kept thread's
 * objects are shared by every reader. `pause` is the loop's turn (tests count it).
 */
export async function parseThread<S, M>(
  body: Buffer,
  bounds: ThreadBounds,
  pause: () => Promise<unknown> = nextTurn,
  sliceBytes = SLICE_BYTES,
): Promise<{ session: S; messages: M[] }> {
  const piece = (i: number) =>
    deepFreeze(JSON.parse(body.toString('utf8', bounds[2 * i], bounds[2 * i + 1])));
  const session = piece(0) as S;
  const messages: M[] = [];
  let since = 0;
  for (let i = 1; 2 * i < bounds.length; i++) {
    since += bounds[2 * i + 1]! - bounds[2 * i]!;
    messages.push(piece(i) as M);
    if (since >= sliceBytes) {
      since = 0;
      await pause();
    }
  }
  return Object.freeze({ session, messages: Object.freeze(messages) as M[] });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
