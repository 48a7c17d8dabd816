import {
  type NodeSavedSession,
  type NodeSavedSessionStore,
  type NodeSavedState,
  type NodeSavedStateStore,
  type RuntimeLock,
  requestLocalLock,
  TokenRevokedError,
} from '@atproto/oauth-client-node';
import type { JsonValue, Sql } from '../db/index.ts';
import { LOCKS } from '../db/index.ts';

/** Pending authorizations older than this are dropped: a Player who wandered off starts again. */
const STATE_TTL = '1 hour';

/** OAuth state store in PostgreSQL. `del` after a callback makes a replayed code fail: its state is gone. */
export function stateStore(sql: Sql): NodeSavedStateStore {
  return {
    async set(key, value) {
      await sql`delete from oauth_states where created_at < now() - ${STATE_TTL}::interval`;
      await sql`insert into oauth_states (key, value) values (${key}, ${sql.json(value as unknown as JsonValue)})
        on conflict (key) do update set value = excluded.value, created_at = now()`;
    },
    async get(key) {
      const [row] = await sql<{ value: NodeSavedState }[]>`
        select value from oauth_states where key = ${key} and created_at > now() - ${STATE_TTL}::interval`;
      return row?.value;
    },
    async del(key) {
      await sql`delete from oauth_states where key = ${key}`;
    },
  };
}

/**
 * OAuth session store in PostgreSQL, keyed by DID: one grant per Player, shared by every device the Player is
 * signed in on. Dropping it does not end web sessions: the client drops it too when a new sign-in replaces it
 * (it revokes the old grant on each callback), and another device must stay signed in then. Only a real end
 * of the grant ends them (`endedGrant`, below).
 */
export function sessionStore(sql: Sql): NodeSavedSessionStore {
  return {
    async set(did, value) {
      await sql`insert into oauth_sessions (did, value) values (${did}, ${sql.json(value as unknown as JsonValue)})
        on conflict (did) do update set value = excluded.value, updated_at = now()`;
    },
    async get(did) {
      const [row] = await sql<
        { value: NodeSavedSession }[]
      >`select value from oauth_sessions where did = ${did}`;
      return row?.value;
    },
    async del(did) {
      await sql`delete from oauth_sessions where did = ${did}`;
    },
  };
}

/**
 * Told by the OAuth client each time it drops a grant, with why. A revocation is ours (a sign-out, or a new
 * sign-in replacing the grant: a fresh one is stored at once) and ends nothing else; a refresh the
 * authorization server refused, or tokens it no longer accepts, ends the grant for good, and with it every web
 * session of the Player on every device: they would only fail later, with a worse message.
 */
export function endedGrant(sql: Sql) {
  return async (did: string, cause: unknown) => {
    if (cause instanceof TokenRevokedError) return;
    await sql`delete from sessions where player_id in (select id from players where did = ${did})`;
  };
}

const LOCK_CLASS = LOCKS.oauthRequest;

/**
 * The OAuth client's request lock as a PostgreSQL advisory lock, so two server processes never spend the same
 * single-use refresh token: the second waits, then finds the fresh tokens in the store.
 *
 * `lockSql` should be a small pool of its own: a lock holds its connection while the locked work queries the
 * main pool, and sharing one pool would let enough waiters starve the holder. Within a process the lock is
 * taken in memory first, so one name never holds more than one connection here.
 */
export function advisoryRequestLock(lockSql: Sql): RuntimeLock {
  return (name, fn) =>
    requestLocalLock(name, async () => {
      const conn = await lockSql.reserve();
      try {
        await conn`select pg_advisory_lock(${LOCK_CLASS}, hashtext(${name}))`;
        try {
          return await fn();
        } finally {
          await conn`select pg_advisory_unlock(${LOCK_CLASS}, hashtext(${name}))`;
        }
      } finally {
        conn.release();
      }
    });
}
