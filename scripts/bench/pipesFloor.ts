import path from 'node:path';
import { nodeFlags } from '../node-flags.mjs';
import { jsonLineChild } from './jsonLineChild.ts';
import type { Phase, PhaseResult } from './loadDriver.ts';
import { median, quantile, round } from './stats.ts';

interface Driver {
  fakeBaseURL: string;
  run(phase: Phase): Promise<PhaseResult>;
}

/** One phase's throughput and how many of the machine's cores were busy during it (null where unknown). */
export interface Rate {
  turnsPerS: number;
  coresBusy: number | null;
}

/**
 * Two bare pipe processes (turn.ts's `streamText` → SSE over the same fake Provider), kept up for the instances
 * section's floor: `rate(1)` runs its load through one, `rate(2)` splits it over both. The section interleaves
 * these with its own phases, round by round, so a floor and the figure it judges share each moment's load
 * (ADR 0095, ADR 0100).
 */
export async function startBarePipes(
  driver: Driver,
  load: { players: number; rounds: number; deltas: number },
  busyCores: () => Promise<() => Promise<number | null>>,
) {
  // With the servers' Node flags, as the bench's own process (which hosts the other sections' pipes) has them.
  const children = [0, 1].map(() =>
    jsonLineChild(path.join(import.meta.dirname, 'pipeChild.ts'), undefined, nodeFlags()),
  );
  const close = () => {
    for (const c of children) c.close();
  };
  try {
    const urls = await Promise.all(
      children.map(async (c) => (await c.ask<{ url: string }>({ fakeBaseURL: driver.fakeBaseURL })).url),
    );
    const rate = async (processes: 1 | 2): Promise<Rate> => {
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
      return { turnsPerS: (load.players * load.rounds) / seconds, coresBusy: await done() };
    };
    return { rate, close };
  } catch (e) {
    close();
    throw e;
  }
}

export const shareOf = (ratio: number, ceiling: number | null) =>
  ceiling === null ? null : round(ratio / Math.min(ceiling, 2), 2);

/** One round of the instances section: each side's phases with one process and with two, side by side. */
export interface FloorRound {
  servers: { one: Rate; two: Rate };
  pipes: { one: Rate; two: Rate };
}

/**
 * A round's share of what the bare pipes attain: the servers' two ÷ one, against their ceiling (cores ÷ the cores
 * one instance kept busy, at most 2) times the share of their own ceiling the pipes reached in the same round.
 * Null where the cores' use is unknown.
 *
 * Each side's share of its own ceiling counts at most 1 (ADR 0107): two processes cannot do more than every core
 * allows, so a reading past it is noise, as the busy-loop probe's efficiency past 1 is. Both sides alike, so a
 * fast moment lifts a round's two sides as one. `unclamped` reads them as measured.
 */
export function roundShare(r: FloorRound, cores: number, unclamped = false): number | null {
  const { servers, pipes } = r;
  if (!servers.one.coresBusy || !pipes.one.coresBusy) return null;
  const ceiling = Math.min(cores / Math.min(servers.one.coresBusy, cores), 2);
  const pipeCeiling = Math.min(cores / Math.min(pipes.one.coresBusy, cores), 2);
  const bounded = (share: number) => (unclamped ? share : Math.min(share, 1));
  const serverShare = bounded(servers.two.turnsPerS / servers.one.turnsPerS / ceiling);
  return serverShare / bounded(pipes.two.turnsPerS / pipes.one.turnsPerS / pipeCeiling);
}

/** The median of the rounds' shares and their spread ([25th, 75th percentile]); null where none is known. */
export function floorShare(rounds: FloorRound[], cores: number, unclamped = false) {
  const shares = rounds.map((r) => roundShare(r, cores, unclamped)).filter((s): s is number => s !== null);
  if (!shares.length) return null;
  return {
    share: round(median(shares), 2),
    spread: [round(quantile(shares, 0.25), 2), round(quantile(shares, 0.75), 2)] as [number, number],
    pairs: shares.length,
  };
}
