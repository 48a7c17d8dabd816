import type { RepoWrite } from './repo.ts';

/** PDS limits on one applyWrites call (PLATFORM.md): 200 writes, 1,000,000 bytes of request JSON. */
export const MAX_WRITES = 200;
export const MAX_BYTES = 950_000; // a margin under the cap for the request's own envelope

/** Rate-limit points a real PDS charges per write, and its hourly budget per account. */
export const POINTS = { create: 3, update: 2, delete: 1 } as const;
export const POINTS_PER_HOUR = 5000;

export const pointsFor = (writes: { action: RepoWrite['action'] }[]) =>
  writes.reduce((sum, w) => sum + POINTS[w.action], 0);

/** Splits writes, in order, into the fewest batches within both limits. Pure. */
export function batches(writes: RepoWrite[]): RepoWrite[][] {
  const out: RepoWrite[][] = [];
  let current: RepoWrite[] = [];
  let bytes = 0;
  for (const write of writes) {
    const size = Buffer.byteLength(JSON.stringify(write)) + 64;
    if (current.length && (current.length === MAX_WRITES || bytes + size > MAX_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(write);
    bytes += size;
  }
  if (current.length) out.push(current);
  return out;
}
