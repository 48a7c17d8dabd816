import { readdir, readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { startDriver } from '../../scripts/bench/latency.ts';
import { floorShare, roundShare, shareOf, startBarePipes } from '../../scripts/bench/pipesFloor.ts';

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
it('runs the load through one bare pipe process or split over two, and leaves none behind', async () => {
  const driver = await startDriver();
  try {
    const alive: number[] = [];
    const pipes = await startBarePipes(driver, { players: 4, rounds: 2, deltas: 3 }, async () => {
      alive.push((await pipeChildren()).length);
      return async () => 1.25;
    });
    try {
      const one = await pipes.rate(1);
      const two = await pipes.rate(2);
      expect(alive).toEqual([2, 2]);
      for (const r of [one, two]) {
        expect(r.coresBusy).toBe(1.25);
        expect(r.turnsPerS).toBeGreaterThan(0);
        expect(Number.isFinite(r.turnsPerS)).toBe(true);
      }
    } finally {
      pipes.close();
    }
  } finally {
    driver.close();
  }
  await expect.poll(pipeChildren, { timeout: 5000 }).toEqual([]);
});

const rate = (turnsPerS: number, coresBusy: number | null = 1) => ({ turnsPerS, coresBusy });
const aRound = (servers: [number, number, number | null], pipes: [number, number, number | null]) => ({
  servers: { one: rate(servers[0], servers[2]), two: rate(servers[1]) },
  pipes: { one: rate(pipes[0], pipes[2]), two: rate(pipes[1]) },
});

// ADR 0100: each round is judged against the floor of its own moment.
it("judges each round's servers against the same round's pipes, and reports the median and its spread", () => {
  // Servers: 1.2 of one instance, one instance keeping 1.6 of 2 cores busy (ceiling 1.25). Pipes: 1.5 of one,
  // one pipe keeping 1.25 cores busy (ceiling 1.6), so a share of their ceiling of 0.9375.
  const r = aRound([100, 120, 1.6], [200, 300, 1.25]);
  expect(roundShare(r, 2)).toBeCloseTo(1.2 / (1.25 * 0.9375), 10);
  // A ceiling past 2 counts as 2: two processes cannot do more than twice one.
  expect(roundShare(aRound([100, 150, 0.5], [100, 150, 0.5]), 2)).toBeCloseTo(1, 10);
  // ADR 0107: pipes past their own ceiling (1.8 of one where one kept 1.25 of 2 cores busy: 1.125 of it) count
  // as at their ceiling, not as a floor the servers must beat past what the cores allow; as measured on request.
  const past = aRound([100, 120, 1.6], [200, 360, 1.25]);
  expect(roundShare(past, 2)).toBeCloseTo(1.2 / 1.25, 10);
  expect(roundShare(past, 2, true)).toBeCloseTo(1.2 / (1.25 * 1.125), 10);
  expect(floorShare([past, past, r], 2)!.share).toBe(0.96);
  expect(floorShare([past, past, r], 2, true)!.share).toBe(0.85);
  // The servers past their own ceiling (1.4 of one against 1.25) count as at it too.
  const servers = aRound([100, 140, 1.6], [200, 300, 1.25]);
  expect(roundShare(servers, 2)).toBeCloseTo(1 / 0.9375, 10);
  expect(roundShare(servers, 2, true)).toBeCloseTo(1.4 / (1.25 * 0.9375), 10);
  // A round whose cores' use is unknown is left out, not counted as 0.
  expect(roundShare(aRound([100, 120, null], [200, 300, 1.25]), 2)).toBeNull();
  // A slow moment hits both sides of its round: judged round by round it cancels, where medians of each side
  // taken apart would not.
  const rounds = [
    aRound([100, 110, 1.6], [200, 220, 1.6]),
    aRound([100, 130, 1.6], [200, 260, 1.6]),
    aRound([100, 120, 1.6], [200, 240, 1.6]),
    aRound([100, 100, null], [200, 300, 1.6]),
  ];
  const share = floorShare(rounds, 2)!;
  expect(share.pairs).toBe(3);
  expect(share.share).toBe(1);
  expect(share.spread).toEqual([1, 1]);
  expect(floorShare([aRound([1, 1, null], [1, 1, null])], 2)).toBeNull();
});

it('reads a ratio as a share of a ceiling, which two processes cannot exceed past 2', () => {
  expect(shareOf(1.2, 1.5)).toBe(0.8);
  expect(shareOf(1.2, 3)).toBe(0.6);
  expect(shareOf(1.2, null)).toBeNull();
});
