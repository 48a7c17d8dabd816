import { randomInt } from 'node:crypto';
import { connectionLost, type Sql } from './client.ts';
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
 * never written to again: postgres.js 3.4.9 throws, uncaught, writing to a closed connection (porsager/postgres#1208).
 */
export async function registerInstance(
  sql: Sql,
  options: { checkMs?: number; log?: (message: string, error?: unknown) => void } = {},
): Promise<Instance> {
  let held = await takeLock(sql, () => randomInt(1, 2 ** 31 - 1));
  const { id } = held;
  const log = options.log ?? (() => {});
  let checking: Promise<void> | undefined;
  let stopped = false;
  // What was last said, so an outage is told once, not every check.
  let said: 'held' | 'unchecked' | 'lost' = 'held';
  const check = async () => {
    try {
      const [row] = await sql<{ pid: number | null }[]>`${holderOf(sql, id)}`;
      if (row?.pid != null) {
        if (row.pid !== held.pid) log(`instance ${id}: its lock is held by another session (${row.pid})`);
        else if (said !== 'held') log(`instance ${id}: its lock is held`);
        said = row.pid === held.pid ? 'held' : said;
        return;
      }
      if (said !== 'lost') log(`instance ${id}: its lock was lost with its connection; taking it again`);
      said = 'lost';
      if (stopped) return;
      const taken = await takeLock(sql, () => id, 1);
      held = taken;
      // Released meanwhile: the lock just taken goes too.
      if (stopped) await endSession(sql, id, taken.pid);
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
      // Its connection is never written to: it may have closed on this side while its backend lives on
      // (porsager/postgres#1208). Its backend is ended through the pool, which drops the lock, and postgres.js
      // then closes the connection as any the server closed.
      await within(2_000, endSession(sql, id, held.pid));
    },
  };
}

/** Waits for `p`, at most `ms`; its failure is not this wait's. */
const within = (ms: number, p: Promise<unknown> | undefined) =>
  Promise.race([p?.catch(() => {}), new Promise((r) => setTimeout(r, ms).unref())]);

/** Ends the backend `pid` if it holds the instance's lock (it is this server's own). */
const endSession = (sql: Sql, id: number, pid: number) =>
  sql`select pg_terminate_backend(pid) from (${holderOf(sql, id)}) h where pid = ${pid}`.catch(() => {});

/**
 * The lock taken on a connection newly reserved, under the id `next` gives, asked `tries` times (a new id each time
 * when registering); the connection and its backend's pid. A connection that did not take it goes back to the pool.
 */
async function takeLock(sql: Sql, next: () => number, tries = Number.POSITIVE_INFINITY) {
  const reserved = await sql.reserve();
  try {
    for (let i = 0; i < tries; i++) {
      const id = next();
      const [row] = await reserved<{ pid: number | null }[]>`
        select case when pg_try_advisory_lock(${INSTANCE_LOCK_CLASS}, ${id}) then pg_backend_pid() end as pid`;
      if (row?.pid != null) return { id, pid: row.pid, reserved };
    }
  } catch (e) {
    if (!connectionLost(e)) reserved.release();
    throw e;
  }
  reserved.release();
  throw new Error('the instance lock is held by another session');
}

/** The backend holding the instance's lock, if any. */
const holderOf = (q: Sql, id: number) => q`select (select pid from pg_locks where locktype = 'advisory'
  and database = ${q.unsafe(THIS_DATABASE)} and classid = ${INSTANCE_LOCK_CLASS} and objid = ${id} and objsubid = 2
  and granted limit 1) as pid`;

/**
 * This database, in pg_locks: advisory locks are the database's own, but pg_locks shows the whole cluster's, where
 * another database's server (staging beside production, tests beside each other) may hold the same id.
 */
const THIS_DATABASE = '(select oid from pg_database where datname = current_database())';

/** SQL fragment source: the ids of servers alive right now. */
export const LIVE_INSTANCES = `select objid::int from pg_locks where locktype = 'advisory' and database = ${THIS_DATABASE} and classid = ${INSTANCE_LOCK_CLASS} and objsubid = 2 and granted`;
