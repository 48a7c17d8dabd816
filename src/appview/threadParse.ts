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
 * objects are shared by every reader. `pause` is the loop's turn (tests count it). At most `PARSES_AT_ONCE` run.
 */
export async function parseThread<S, M>(
  body: Buffer,
  bounds: ThreadBounds,
  pause: () => Promise<unknown> = nextTurn,
  sliceBytes = SLICE_BYTES,
): Promise<{ session: S; messages: M[] }> {
  await turnAtParses();
  try {
    const pieces: unknown[] = [];
    let since = 0;
    for (let i = 0; 2 * i < bounds.length; i++) {
      const [start, end] = [bounds[2 * i]!, bounds[2 * i + 1]!];
      pieces.push(deepFreeze(JSON.parse(body.toString('utf8', start, end))));
      since += end - start;
      if (since >= sliceBytes) {
        since = 0;
        await pause();
      }
    }
    const [session, ...messages] = pieces;
    return Object.freeze({ session: session as S, messages: Object.freeze(messages) as M[] });
  } finally {
    nextParse();
  }
}

/**
 * Parses under way at once, at most: each holds its thread's objects as they grow (a few times its bytes), and one
 * that yields lets another start. Readers of many large threads at once wait their turn here.
 */
export const PARSES_AT_ONCE = 2;
let running = 0;
const waiting: (() => void)[] = [];

function turnAtParses(): Promise<void> | undefined {
  if (running < PARSES_AT_ONCE) {
    running++;
    return undefined;
  }
  return new Promise((resolve) => waiting.push(resolve));
}

/** A parse ended: its place goes to the first waiting (the count stays), or is freed. */
function nextParse(): void {
  const next = waiting.shift();
  if (next) next();
  else running--;
}

/** Parses under way now, and waiting (tests). */
export const parsesNow = (): { running: number; waiting: number } => ({
  running,
  waiting: waiting.length,
});

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
