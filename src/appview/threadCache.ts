/** A thread's answer as kept: the bytes sent, their ETag, and the thread's version they are of. */
export interface KeptThread {
  body: Buffer;
  etag: string;
  version: string;
  /** Where its session and each turn lie in `body`, for the reader's parse (threadParse.ts). */
  bounds: Uint32Array;
  /** Its author. */
  did: string;
}

/** Threads kept at most, whatever their size. */
const CACHED_THREADS = 200;

/**
 * The kept answers' bytes, at most; the reader's parsed objects of a kept answer live as long as it does and take
 * a few times more. Counted by entries alone, the 200 threads of up to 16 MiB each that any repo may publish held
 * gigabytes after one read of each. One answer past a quarter of this is served and not kept.
 */
let budget = 128 * 1024 * 1024;
let kept = 0;
const threads = new Map<string, KeptThread>();

/** The byte budget (tests make it small). */
export const setThreadCacheBytes = (bytes: number): void => {
  budget = bytes;
  evict();
};

/** The bytes the kept answers hold now. */
export const threadCacheBytes = (): number => kept;

export const keptThread = (uri: string): KeptThread | undefined => threads.get(uri);

/** Keeps `answer` as the thread's newest, the oldest kept going first past the bounds. */
export function keepThread(uri: string, answer: KeptThread): void {
  forget(uri);
  if (answer.body.length + answer.bounds.byteLength > budget / 4) return;
  threads.set(uri, answer);
  kept += answer.body.length + answer.bounds.byteLength;
  evict();
}

function evict(): void {
  while (threads.size > CACHED_THREADS || kept > budget) forget(threads.keys().next().value!);
}

function forget(uri: string): void {
  const answer = threads.get(uri);
  if (!answer) return;
  threads.delete(uri);
  kept -= answer.body.length + answer.bounds.byteLength;
}
