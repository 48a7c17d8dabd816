import type { Sql } from './client.ts';
import { endHolding, type Holding, holderPid, type LockKey, tryTake, within } from './heldLock.ts';

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
 * is not the leader asks every `retryMs`, each time on a connection reserved for the try alone; none is kept while
 * waiting. The leader asks the pool every `checkMs` whether its session still holds the lock: a database restart
 * drops it, and another server may take it meanwhile. Lost, the leader stops its work and waits like the rest, so
 * two leaders overlap at most for a check and a stop.
 */
export function lead(sql: Sql, key: LockKey, o: LeadOptions): Leadership {
  let stopped = false;
  let wake = () => {};
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  let led!: () => void;
  const leading = new Promise<void>((resolve) => {
    led = resolve;
  });
  // What was last said of a failing try, so an outage is told once.
  let failing = false;
  const take = async (): Promise<Holding | undefined> => {
    try {
      const taken = await tryTake(sql, key);
      failing = false;
      return taken;
    } catch (e) {
      if (!failing) o.log(`${o.name}: the lock could not be asked for; asked again shortly`, e);
      failing = true;
      return undefined;
    }
  };
  /** Leads while `holding` holds the lock; resolves once it is lost, or on stop. */
  const leadWhileHeld = async (holding: Holding) => {
    while (!stopped) {
      await nap(o.checkMs ?? 2_000);
      if (stopped) return;
      // A check that fails (the database gone) tells nothing: the lock is judged once the pool answers again.
      const pid = await holderPid(sql, key).catch(() => holding.pid);
      if (pid === holding.pid) continue;
      o.log(
        `${o.name}: the lock was lost with its connection (now held by ${pid ?? 'no one'}); its work stops`,
      );
      return;
    }
  };
  const run = async () => {
    while (!stopped) {
      const holding = await take();
      if (!holding) {
        await nap(o.retryMs ?? 5_000);
        continue;
      }
      let stopWork: (() => Promise<void>) | undefined;
      try {
        if (!stopped) stopWork = await o.start();
        if (stopWork) led();
        if (stopWork) await leadWhileHeld(holding);
      } catch (e) {
        o.log(`${o.name}: the leader's work failed to start`, e);
        if (!stopped) await nap(o.retryMs ?? 5_000);
      } finally {
        await stopWork?.().catch((e) => o.log(`${o.name}: the leader's work failed to stop`, e));
        await within(2_000, endHolding(sql, key, holding.pid));
      }
    }
  };
  const running = run();
  return {
    leading,
    async stop() {
      stopped = true;
      wake();
      // A try waiting on a gone database gives up within its reserve's bound; its lock, if it comes, is let go.
      await running;
    },
  };
}
