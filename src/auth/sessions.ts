import { createHash, randomBytes } from 'node:crypto';
import type { Queryable, Sql } from '../db/index.ts';

export const SESSION_COOKIE = 'av_session';
export const SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export interface Player {
  id: string;
  did: string;
  handle: string | null;
}

const hash = (token: string) => createHash('sha256').update(token).digest();

/**
 * Finds or creates the Player for a DID, refreshing the handle: null when they have none that verifies (cleared,
 * so a name that stopped verifying, or one stored unverified before, is not shown on), undefined when it could not
 * be looked up just now (kept).
 */
export async function upsertPlayer(
  sql: Sql,
  did: string,
  handle: string | null | undefined,
): Promise<Player> {
  const [row] = await sql<Player[]>`
    insert into players (did, handle) values (${did}, ${handle ?? null})
    on conflict (did) do update set handle = case when ${handle === undefined} then players.handle
      else excluded.handle end
    returning id, did, handle`;
  return row!;
}

/**
 * A Player's DID and handle, as a subquery another room's statement joins laterally on its own Player id
 * (`cross join lateral (…) p`): a row only for a Player who exists.
 */
export const playerNamed = (q: Queryable, playerId: ReturnType<Queryable>) =>
  q`select did, handle from players where id = ${playerId}`;

/**
 * The Player id of a live session, as a scalar subquery (null for a token with no live session): for a statement
 * that resolves the session itself, in the same statement as its own reads (the turn's first), where
 * `requireSession` would take a round trip of its own before them.
 */
export const sessionPlayerSql = (q: Queryable, token: string) =>
  q`(select s.player_id from sessions s where s.token_hash = ${hash(token)} and s.expires_at > now())`;

/** The live session's Player (`findSession`'s row) as JSON, null when there is none: for a statement that reads
 * more beside it. */
export const sessionPlayerJsonSql = (q: Queryable, token: string) =>
  q`(select to_jsonb(x) from (${sessionPlayerRow(q, token)}) x)`;

const sessionPlayerRow = (q: Queryable, token: string) =>
  q`select p.id, p.did, p.handle from sessions s join players p on p.id = s.player_id
    where s.token_hash = ${hash(token)} and s.expires_at > now()`;

/** Starts a web session: returns the opaque token for the cookie; only its hash is stored. */
export async function createSession(sql: Sql, playerId: string, ttlMs = SESSION_TTL_MS): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await sql`insert into sessions (token_hash, player_id, expires_at)
    values (${hash(token)}, ${playerId}, ${new Date(Date.now() + ttlMs)})`;
  return token;
}

export async function findSession(sql: Sql, token: string): Promise<Player | undefined> {
  const [row] = await sql<Player[]>`${sessionPlayerRow(sql, token)}`;
  return row;
}

/** Ends every web session of a Player (their grant has ended). */
export async function endSessions(sql: Sql, playerId: string): Promise<void> {
  await sql`delete from sessions where player_id = ${playerId}`;
}

/** Ends one web session (signing out on one device); says how many the Player still has elsewhere. */
export async function endSession(sql: Sql, token: string): Promise<{ remaining: number }> {
  const [row] = await sql<{ remaining: number }[]>`
    with gone as (delete from sessions where token_hash = ${hash(token)} returning player_id)
    select count(*)::int as remaining from sessions s, gone
    where s.player_id = gone.player_id and s.expires_at > now() and s.token_hash <> ${hash(token)}`;
  return { remaining: row?.remaining ?? 0 };
}
