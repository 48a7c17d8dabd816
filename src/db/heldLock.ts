import type postgres from 'postgres';
import { connectionLost, reserve, type Sql } from './client.ts';

/**
 * A session-level advisory lock: one key (below 2^32, as every one-key lock in locks.ts), or a class and an id.
 * Such a lock lives as long as its connection's backend: a server holds it on a connection of its own, and a
 * database restart drops it with the server alive. Held locks are therefore checked through the pool and taken
 * again on a connection newly reserved; the connection that held one is never written to again: closed on this
 * side, it cannot reach the backend still holding the lock (and until ADR 0104 a statement sent on it threw,
 * uncaught: porsager/postgres#1208). ADR 0102, 0103.
 */
export type LockKey = readonly [key: number] | readonly [classid: number, id: number];

/**
 * A backend, by its pid and when it started: a pid alone can be another backend's after a restart or a failover
 * (a new pid namespace counts from the start again), which would take another server's lock for this one's.
 */
export interface Backend {
  pid: number;
  started: string;
}

/** A lock taken: the backend holding it and the connection reserved for it. */
export interface Holding extends Backend {
  reserved: postgres.ReservedSql;
}

const lockArgs = (q: Sql, key: LockKey) => (key.length === 1 ? q`${key[0]}` : q`${key[0]}, ${key[1]}`);

/**
 * Tries `key` once, on a connection newly reserved; the connection goes back to the pool unless it took the lock.
 * A reserve that has not answered within `reserveMs` (a database gone) is given up; should it answer later, its
 * connection goes back at once. Called once the pool has answered that no one holds the lock: a reserve made
 * while the database is gone can, once refused, strand a pool connection in postgres.js 3.4 (ADR 0103).
 */
export async function tryTake(sql: Sql, key: LockKey, reserveMs = 10_000): Promise<Holding | undefined> {
  const reserved = await reserveWithin(sql, reserveMs);
  try {
    const [row] = await reserved<{ ok: boolean; pid: number; started: string | null }[]>`
      select t.ok, pg_backend_pid() as pid, (select ${sql.unsafe(STARTED)} from pg_stat_activity where pid = pg_backend_pid())
        as started from (select pg_try_advisory_lock(${lockArgs(sql, key)}) as ok) t`;
    if (row?.ok && row.started != null) return { pid: row.pid, started: row.started, reserved };
    // Taken, but its backend could not be told apart from a later one of the same pid: let go at once.
    if (row?.ok) await reserved`select pg_advisory_unlock(${lockArgs(sql, key)})`;
  } catch (e) {
    if (!connectionLost(e)) reserved.release();
    throw e;
  }
  reserved.release();
  return undefined;
}

async function reserveWithin(sql: Sql, ms: number): Promise<postgres.ReservedSql> {
  let late = false;
  const reserving = reserve(sql);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      reserving,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          late = true;
          reject(new Error(`no connection to take a lock on within ${ms} ms`));
        }, ms);
        timer.unref();
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (late) reserving.then((r) => r.release()).catch(() => {});
  }
}

/**
 * When a backend started, as microseconds since the epoch: the same text in every session, whatever its TimeZone
 * (a timestamp's text is rendered in the session's zone, and the pool's sessions may differ from the lock's).
 */
const STARTED = '(extract(epoch from backend_start) * 1000000)::int8::text';

/** The backend holding `key` in this database, if any: one statement through the pool. */
export const holderOf = (q: Sql, key: LockKey) => {
  const [classid, objid, objsubid] = key.length === 1 ? [0, key[0], 1] : [key[0], key[1], 2];
  return q`select l.pid, ${q.unsafe(STARTED)} as started from pg_locks l join pg_stat_activity a using (pid)
    where l.locktype = 'advisory' and l.database = ${q.unsafe(THIS_DATABASE)} and l.classid = ${classid}
    and l.objid = ${objid} and l.objsubid = ${objsubid} and l.granted limit 1`;
};

/** The backend holding `key` now, or null when no one does. */
export async function holderNow(sql: Sql, key: LockKey): Promise<Backend | null> {
  const [row] = await sql<Backend[]>`${holderOf(sql, key)}`;
  return row ?? null;
}

/** Whether `holder` is the backend `b`. */
export const isBackend = (holder: Backend | null, b: Backend) =>
  holder !== null && holder.pid === b.pid && holder.started === b.started;

/**
 * Lets go of a lock taken by this server: its backend is ended through the pool if it still holds `key`, which
 * drops the lock, and postgres.js then closes the connection as any the server closed. Its own connection is
 * never written to: it may have closed on this side while the backend lives on. Resolves once the backend
 * let go (a successor can take the lock at once), or after about 2 s; it never fails.
 */
export async function endHolding(sql: Sql, key: LockKey, b: Backend): Promise<void> {
  try {
    await sql`select pg_terminate_backend(pid) from (${holderOf(sql, key)}) h
      where pid = ${b.pid} and started = ${b.started}`;
    // The signal is sent; the backend exits a moment later.
    for (let i = 0; i < 40 && isBackend(await holderNow(sql, key), b); i++)
      await new Promise((r) => setTimeout(r, 50));
  } catch {
    // Not answered: the database is gone, and the lock with it, or the lock is left to its backend's end.
  }
}

/**
 * This database, in pg_locks: advisory locks are the database's own, but pg_locks shows the whole cluster's, where
 * another database's server (staging beside production, tests beside each other) may hold the same key.
 */
export const THIS_DATABASE = '(select oid from pg_database where datname = current_database())';

/** Waits for `p`, at most `ms`; its failure is not this wait's. */
export const within = (ms: number, p: Promise<unknown> | undefined) =>
  Promise.race([p?.catch(() => {}), new Promise((r) => setTimeout(r, ms).unref())]);

/** A pool statement's answer, or a failure once it has waited `ms` (a database gone, a socket half-open). */
export function answered<T>(p: Promise<T>, ms = 5_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the database did not answer within ${ms} ms`)), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}
