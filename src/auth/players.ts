import type { Queryable } from '../db/index.ts';

// The Players as other rooms name them: by DID (an admin's block) or beside their own rows (a fragment that
// reads a Player's DID in the caller's statement, so a list stays one statement).

/** The Player this DID signed in as, or null when it never has. */
export async function playerIdOfDid(sql: Queryable, did: string): Promise<string | null> {
  const [row] = await sql<{ id: string }[]>`select id from players where did = ${did}`;
  return row?.id ?? null;
}

/** The DID of the Player whose id is `playerId` (a column of the caller's statement), as a scalar subquery. */
export const playerDid = (sql: Queryable, playerId: ReturnType<Queryable>) =>
  sql`(select did from players where id = ${playerId})`;
