import {
  type NodeSavedSession,
  type NodeSavedSessionStore,
  type NodeSavedState,
  type NodeSavedStateStore,
  type RuntimeLock,
  TokenRefreshError,
  TokenRevokedError,
} from '@atproto/oauth-client-node';
import { type JsonValue, LeaseBusyError, type Leases, type LeaseTerms, type Sql } from '../db/index.ts';
import { asPlayer } from './playerCalls.ts';

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
    // Ours, or found gone: whoever took it away decided (their own call here said why), and a sign-in on another
    // device takes it away for an instant before storing the new one (revoke, delete, store).
    if (cause instanceof TokenRevokedError || replacedElsewhere(cause)) return;
    await sql`delete from sessions where player_id in (select id from players where did = ${did})`;
  };
}

/**
 * The OAuth client's word for a grant not in the store when it looked (it deletes nothing then): another request
 * or device took it away, perhaps to store a new one at once. Only the library's message tells it apart.
 */
export const replacedElsewhere = (e: unknown): boolean =>
  // Exactly the library's own words, with no cause: a refused refresh carries the server's words (any text) and
  // the server's error as its cause.
  e instanceof TokenRefreshError && e.message === 'The session was deleted by another process' && !e.cause;

/** How the OAuth request lock is held (ADR 0054): the argument for these numbers is there. */
export const OAUTH_LEASE: LeaseTerms = { ttlMs: 45_000, waitMs: 60_000 };

/** The name the OAuth client gives the lock around a Player's session (the DID follows it). */
const SESSION_LOCK = '@atproto-oauth-client-';

/** The request lock could not be had in time: another request (or server) is renewing the sign-in. */
export class SignInBusyError extends Error {}

/**
 * The OAuth client's request lock as a lease (ADR 0054), so two server processes never spend the same
 * single-use refresh token: the second waits, then finds the fresh tokens in the store. Nothing holds a
 * connection meanwhile — a refresh waits on the Player's own authorization server, which may take its time.
 * Within a process, one request per name waits for the lease; the others wait in line in memory.
 *
 * Every request made under it is counted as the Player's (playerCalls.ts), and is fenced by the lease: none
 * goes out unless the lease surely outlives it.
 */
export function leaseRequestLock(leases: Leases, terms = OAUTH_LEASE): RuntimeLock {
  return (name, fn) =>
    leases
      .hold(`oauth:${name}`, terms, async () =>
        name.startsWith(SESSION_LOCK) ? asPlayer(name.slice(SESSION_LOCK.length), fn) : fn(),
      )
      .catch((e: unknown) => {
        throw e instanceof LeaseBusyError
          ? new SignInBusyError('the sign-in is being renewed elsewhere and it is taking long')
          : e;
      });
}
