import { randomInt } from 'node:crypto';
import type { Sql } from './client.ts';
import { LOCKS } from './locks.ts';

/** The advisory-lock class under which each running server holds one lock named by its instance id. */
const INSTANCE_LOCK_CLASS = LOCKS.instance;

export interface Instance {
  /** A positive int4, unique among live servers on this database. */
  id: number;
  release(): Promise<void>;
}

/**
 * Registers this process as a live server: it holds an advisory lock for as long as it runs, on a reserved
 * connection. When the process dies, PostgreSQL drops the lock with the connection, which is how other
 * servers can tell a reply left mid-stream by a dead process from one still being written by a live one.
 */
export async function registerInstance(sql: Sql): Promise<Instance> {
  const reserved = await sql.reserve();
  for (;;) {
    const id = randomInt(1, 2 ** 31 - 1);
    const [row] = await reserved<
      { ok: boolean }[]
    >`select pg_try_advisory_lock(${INSTANCE_LOCK_CLASS}, ${id}) as ok`;
    if (row?.ok) {
      return {
        id,
        async release() {
          await reserved`select pg_advisory_unlock(${INSTANCE_LOCK_CLASS}, ${id})`.catch(() => {});
          reserved.release();
        },
      };
    }
  }
}

/** SQL fragment source: the ids of servers alive right now. */
export const LIVE_INSTANCES = `select objid::int from pg_locks where locktype = 'advisory' and classid = ${INSTANCE_LOCK_CLASS} and objsubid = 2 and granted`;
