import path from 'node:path';
import { nodeFlags } from '../node-flags.mjs';
import { jsonLineChild } from './jsonLineChild.ts';
import type { Phase, PhaseResult } from './loadDriver.ts';
import { type Paired, paired, round, spreadOf } from './stats.ts';

interface Driver {
  fakeBaseURL: string;
  run(phase: Phase): Promise<PhaseResult>;
}

/**
 * What a second process adds to a bare pipe's throughput here: the instances section's load (`players` at once,
 * each taking `rounds` unpaced turns back to back) through one bare pipe process and then split over two,
 * alternately, `reps` times; turns per second, medians. Beside it, the cores one pipe left idle, so the share of
 * its own ceiling it reached: what splitting a stream load over two processes on these cores attains at best,
 * whatever the server does (ADR 0095).
 */
export async function barePipesFloor(
  driver: Driver,
  load: { players: number; rounds: number; deltas: number; reps: number },
  busyCores: () => Promise<() => Promise<number | null>>,
) {
  // With the servers' Node flags, as the bench's own process (which hosts the other sections' pipes) has them.
  const children = [0, 1].map(() =>
    jsonLineChild(path.join(import.meta.dirname, 'pipeChild.ts'), undefined, nodeFlags()),
  );
  try {
    const urls = await Promise.all(
      children.map(async (c) => (await c.ask<{ url: string }>({ fakeBaseURL: driver.fakeBaseURL })).url),
    );
    const busy: number[] = [];
    const rate = async (processes: 1 | 2, counted = true) => {
      const done = await busyCores();
      const t0 = performance.now();
      await driver.run({
        target: 'pipe',
        urls: Array.from({ length: load.players }, (_, i) => urls[i % processes]!),
        deltas: load.deltas,
        paceMs: 0,
        turnsEach: load.rounds,
      });
      const seconds = (performance.now() - t0) / 1000;
      const cores = await done();
      if (counted && processes === 1 && cores !== null) busy.push(cores);
      return (load.players * load.rounds) / seconds;
    };
    // Warm both (connections, JIT) before any is counted.
    await rate(2, false);
    await rate(1, false);
    const one: number[] = [];
    const two: number[] = [];
    for (let rep = 0; rep < load.reps; rep++) {
      if (rep % 2) {
        two.push(await rate(2));
        one.push(await rate(1));
      } else {
        one.push(await rate(1));
        two.push(await rate(2));
      }
    }
    const p: Paired = paired(two, one);
    return { ratio: p.ratio, ...spreadOf(p), busyOne: busy };
  } finally {
    for (const c of children) c.close();
  }
}

export const shareOf = (ratio: number, ceiling: number | null) =>
  ceiling === null ? null : round(ratio / Math.min(ceiling, 2), 2);
