import { readFile } from 'node:fs/promises';
import { median, round } from './stats.ts';

/** How often a thread was switched off its core: it waited (voluntary) or was pushed off (involuntary). */
export interface Switches {
  voluntary: number;
  involuntary: number;
}

/**
 * Context switches so far of each server's main thread — its event loop, the thread every turn's JavaScript
 * runs on — summed over `pids`; null where there is no /proc. A thread waiting for work is switched off
 * voluntarily; one preempted while it had work, involuntarily, and comes back to caches and a TLB another
 * process filled.
 */
export async function mainThreadSwitches(pids: (number | undefined)[]): Promise<Switches | null> {
  const total: Switches = { voluntary: 0, involuntary: 0 };
  try {
    for (const pid of pids) {
      if (!pid) continue;
      const status = await readFile(`/proc/${pid}/task/${pid}/status`, 'utf8');
      total.voluntary += Number(/^voluntary_ctxt_switches:\s*(\d+)/m.exec(status)?.[1] ?? Number.NaN);
      total.involuntary += Number(/^nonvoluntary_ctxt_switches:\s*(\d+)/m.exec(status)?.[1] ?? Number.NaN);
    }
  } catch {
    return null;
  }
  return Number.isFinite(total.voluntary + total.involuntary) ? total : null;
}

/** Switches per turn between two readings. */
export const switchesPerTurn = (a: Switches, b: Switches, turns: number): Switches => ({
  voluntary: (b.voluntary - a.voluntary) / turns,
  involuntary: (b.involuntary - a.involuntary) / turns,
});

/** The medians of a phase's readings, rounded; null when there were none. */
export function medianSwitches(list: Switches[]): Switches | null {
  if (!list.length) return null;
  return {
    voluntary: round(median(list.map((s) => s.voluntary)), 2),
    involuntary: round(median(list.map((s) => s.involuntary)), 2),
  };
}
