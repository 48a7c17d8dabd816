import { randomInt } from 'node:crypto';
import type { Sql } from './client.ts';
import {
  answered,
  endHolding,
  type Holding,
  holderNow,
  isBackend,
  THIS_DATABASE,
  tryTake,
  within,
} from './heldLock.ts';
import { LOCKS } from './locks.ts';

/** The advisory-lock class under which each running server holds one lock named by its instance id. */
const INSTANCE_LOCK_CLASS = LOCKS.instance;

/** How often the pool is asked whether this server's instance lock is still held (ADR 0102). */
export const INSTANCE_CHECK_MS = 2_000;

export interface Instance {
  /** A positive int4, unique among live servers on this database. */
  id: number;
  release(): Promise<void>;
}

/**
 * Registers this process as a live server: it holds an advisory lock for as long as it runs, on a reserved
 * connection. When the process dies, PostgreSQL drops the lock with the connection, which is how other
 * servers can tell a reply left mid-stream by a dead process from one still being written by a live one.
 *
 * A database restart or failover drops the lock too, with the server alive: every server's sweeps would take its
 * replies for a dead one's, and its claims for free (ADR 0102). So every `checkMs` the pool is asked whether anyone
 * holds the lock; when no one does, its connection is gone with it, and the lock is taken again, under the same id
 * (the replies and claims written under it stay this server's), on a connection newly reserved. The old one is
 * never written to again (heldLock.ts).
 */
export async function registerInstance(
  sql: Sql,
  options: { checkMs?: number; log?: (message: string, error?: unknown) => void } = {},
): Promise<Instance> {
  let id = 0;
  let held: Holding | undefined;
  // A new id while the one drawn is taken (a live server's, 1 in 2^31).
  while (!held) {
    id = randomInt(1, 2 ** 31 - 1);
    held = await tryTake(sql, [INSTANCE_LOCK_CLASS, id]);
  }
  const key = [INSTANCE_LOCK_CLASS, id] as const;
  let holding: Holding = held;
  const log = options.log ?? (() => {});
  let checking: Promise<void> | undefined;
  let stopped = false;
  // What was last said, so an outage is told once, not every check.
  let said: 'held' | 'unchecked' | 'lost' = 'held';
  const check = async () => {
    try {
      // Bounded: a check held by a half-open socket would keep every later one from starting.
      const holder = await answered(holderNow(sql, key));
      if (holder) {
        const mine = isBackend(holder, holding);
        if (!mine) log(`instance ${id}: its lock is held by another session (${holder.pid})`);
        else if (said !== 'held') log(`instance ${id}: its lock is held`);
        said = mine ? 'held' : said;
        return;
      }
      if (said !== 'lost') log(`instance ${id}: its lock was lost with its connection; taking it again`);
      said = 'lost';
      if (stopped) return;
      const taken = await tryTake(sql, key);
      if (!taken) throw new Error('the instance lock is held by another session');
      holding = taken;
      // Released meanwhile: the lock just taken goes too.
      if (stopped) await endHolding(sql, key, taken);
      else log(`instance ${id}: its lock is held again`);
      said = 'held';
    } catch (e) {
      if (said === 'held') log(`instance ${id}: its lock could not be checked; asked again shortly`, e);
      if (said === 'held') said = 'unchecked';
    }
  };
  const timer = setInterval(() => {
    checking ??= check().finally(() => {
      checking = undefined;
    });
  }, options.checkMs ?? INSTANCE_CHECK_MS);
  timer.unref();
  return {
    id,
    async release() {
      stopped = true;
      clearInterval(timer);
      // A check waiting on a gone database is not waited for long: the pool's end stops it.
      await within(1_000, checking);
      await within(2_000, endHolding(sql, key, holding));
    },
  };
}

/** SQL fragment source: the ids of servers alive right now. */
export const LIVE_INSTANCES = `select objid::int from pg_locks where locktype = 'advisory' and database = ${THIS_DATABASE} and classid = ${INSTANCE_LOCK_CLASS} and objsubid = 2 and granted`;
