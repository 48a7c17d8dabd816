import { readdir, readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { startDriver } from '../../scripts/bench/latency.ts';
import { barePipesFloor, shareOf } from '../../scripts/bench/pipesFloor.ts';

/** This process's children running the bench's bare pipe (Linux /proc). */
async function pipeChildren(): Promise<number[]> {
  const found: number[] = [];
  for (const pid of (await readdir('/proc')).filter((d) => /^\d+$/.test(d))) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid !== process.pid) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes('pipeChild.ts')) found.push(Number(pid));
  }
  return found;
}

// ADR 0095: the instances figure's floor is the same load through bare pipes in one process and then two.
it('runs the load through one bare pipe process and through two, alternately, and leaves none behind', async () => {
  const driver = await startDriver();
  try {
    const alive: number[] = [];
    let phases = 0;
    const floor = await barePipesFloor(driver, { players: 4, rounds: 2, deltas: 3, reps: 2 }, async () => {
      alive.push((await pipeChildren()).length);
      phases++;
      return async () => 1.25;
    });
    // Two warm-up phases, then a one-process and a two-process phase per rep.
    expect(phases).toBe(6);
    expect(alive.every((n) => n === 2)).toBe(true);
    expect(floor.pairs).toBe(2);
    expect(floor.ratio).toBeGreaterThan(0);
    expect(Number.isFinite(floor.ratio)).toBe(true);
    // Only the counted one-process phases: the warm-up's are not.
    expect(floor.busyOne).toEqual([1.25, 1.25]);
  } finally {
    driver.close();
  }
  await expect.poll(pipeChildren, { timeout: 5000 }).toEqual([]);
});

it('reads a ratio as a share of a ceiling, which two processes cannot exceed past 2', () => {
  expect(shareOf(1.2, 1.5)).toBe(0.8);
  expect(shareOf(1.2, 3)).toBe(0.6);
  expect(shareOf(1.2, null)).toBeNull();
});
