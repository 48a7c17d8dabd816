import type { Sql } from './client.ts';
import {
  answered,
  endHolding,
  type Holding,
  holderNow,
  isBackend,
  type LockKey,
  tryTake,
  within,
} from './heldLock.ts';

export interface LeadOptions {
  /** Named in what is logged. */
  name: string;
  /** Starts the leader's work once the lock is held; what it returns stops that work. */
  start: () => Promise<() => Promise<void>>;
  log: (message: string, error?: unknown) => void;
  /** How often a server that is not the leader asks for the lock. */
  retryMs?: number;
  /** How often the leader asks the pool whether it still holds the lock. */
  checkMs?: number;
}

export interface Leadership {
  /** Resolves once this process has led (tests wait on it). */
  leading: Promise<void>;
  /** Stops the work if it runs, and lets go of the lock. */
  stop(): Promise<void>;
}

/**
 * One leader across server processes, for as long as it holds the advisory lock `key` (ADR 0103). A server that
 * is not the leader asks the pool every `retryMs` who holds it, and tries for it, on a connection reserved for the
 * try alone, only when no one does; none is kept while waiting. The leader asks the pool every `checkMs` whether
 * its backend still holds the lock: a database restart drops it, and another server may take it meanwhile. Lost,
 * the leader stops its work and waits like the rest, so two leaders overlap for a check and a stop.
 */
export function lead(sql: Sql, key: LockKey, o: LeadOptions): Leadership {
  let stopped = false;
  let wake = () => {};
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      if (stopped) return resolve();
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const { promise: leading, resolve: led } = Promise.withResolvers<void>();
  // Failures in a row, so a streak is told once and waited out longer each time.
  const streak = { asking: 0, starting: 0 };
  const failed = (what: 'asking' | 'starting', message: string, e: unknown) => {
    if (!streak[what]++) o.log(`${o.name}: ${message}`, e);
  };
  const retryMs = o.retryMs ?? 5_000;
  const take = () =>
    takeIfFree(sql, key).then(
      (taken) => {
        streak.asking = 0;
        return taken;
      },
      (e: unknown) => {
        failed('asking', 'the lock could not be asked for; asked again shortly', e);
        return undefined;
      },
    );
  /** Leads while `holding` holds the lock; resolves once it is lost, or on stop. */
  const leadWhileHeld = async (holding: Holding) => {
    while (!stopped) {
      await nap(o.checkMs ?? 2_000);
      if (stopped) return;
      // A check not answered (the database gone) tells nothing: the lock is judged once the pool answers again.
      const holder = await answered(holderNow(sql, key)).catch(() => holding);
      if (isBackend(holder, holding)) continue;
      o.log(
        `${o.name}: the lock was lost with its connection (held by ${holder?.pid ?? 'no one'}); its work stops`,
      );
      return;
    }
  };
  const run = async () => {
    while (!stopped) {
      const holding = await take();
      if (!holding) {
        await nap(retryMs);
        continue;
      }
      let stopWork: (() => Promise<void>) | undefined;
      let startFailed = false;
      try {
        if (!stopped) stopWork = await o.start();
        streak.starting = 0;
        if (stopWork && !stopped) led();
        if (stopWork) await leadWhileHeld(holding);
      } catch (e) {
        startFailed = true;
        failed('starting', "the leader's work failed to start; tried again later", e);
      } finally {
        await stopWork?.().catch((e) => o.log(`${o.name}: the leader's work failed to stop`, e));
        await within(2_000, endHolding(sql, key, holding));
      }
      // Waited out without the lock: another server may lead meanwhile.
      if (startFailed) await nap(Math.min(retryMs * 2 ** streak.starting, 5 * 60_000));
    }
  };
  const running = run();
  return {
    leading,
    async stop() {
      stopped = true;
      wake();
      await running;
    },
  };
}

/** The lock, when the pool answers that no one holds it and this try wins. */
async function takeIfFree(sql: Sql, key: LockKey): Promise<Holding | undefined> {
  const holder = await answered(holderNow(sql, key));
  return holder === null ? await tryTake(sql, key) : undefined;
}
