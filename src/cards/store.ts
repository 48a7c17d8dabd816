import type { JsonValue, Queryable, Sql } from '../db/index.ts';
import type { Lorebook } from './lorebook.ts';

/** Lorebooks belong to the NPCs they are attached to (never to a Player's Memory); a card's own is `embedded`. */

const MAX_LOREBOOKS = 500;
/** Attached to one NPC at most: each is scanned on every turn the NPC speaks. */
export const MAX_BOOKS_PER_NPC = 8;

export async function insertLorebook(tx: Queryable, playerId: string, book: Lorebook): Promise<string> {
  const [row] = await tx<{ id: string }[]>`
    insert into lorebooks (player_id, name, book)
    select ${playerId}, ${typeof book.name === 'string' ? book.name.slice(0, 200) : ''}, ${tx.json(book as unknown as JsonValue)}
    where (select count(*) from lorebooks where player_id = ${playerId}) < ${MAX_LOREBOOKS}
    returning id`;
  if (!row) throw new Error('TOO_MANY_LOREBOOKS');
  return row.id;
}

/** Replaces an NPC's own (card) lorebook with `book` (none: removes it), in the caller's transaction. */
export async function setEmbeddedBook(
  tx: Queryable,
  playerId: string,
  npcId: string,
  book: Lorebook | null,
): Promise<void> {
  await tx`delete from lorebooks where id in (
    select lorebook_id from npc_lorebooks where npc_id = ${npcId} and embedded)`;
  if (!book) return;
  const id = await insertLorebook(tx, playerId, book);
  await tx`insert into npc_lorebooks (npc_id, lorebook_id, embedded) values (${npcId}, ${id}, true)`;
}

export async function embeddedBook(sql: Queryable, npcId: string): Promise<Lorebook | null> {
  const [row] = await sql<{ book: Lorebook }[]>`
    select l.book from npc_lorebooks n join lorebooks l on l.id = n.lorebook_id
    where n.npc_id = ${npcId} and n.embedded`;
  return row?.book ?? null;
}

/**
 * For a turn's NPC read (village's `TurnColumns`): whether any lorebook is attached, so a turn of an NPC with none
 * (most) does not read them.
 */
export const hasBooksColumn = (q: Queryable) =>
  q`, exists (select 1 from npc_lorebooks b where b.npc_id = npcs.id) as "hasBooks"`;

/** Every lorebook attached to an NPC, its own first, for the prompt. */
export async function booksOf(sql: Sql, npcId: string): Promise<Lorebook[]> {
  const rows = await sql<{ book: Lorebook }[]>`
    select l.book from npc_lorebooks n join lorebooks l on l.id = n.lorebook_id
    where n.npc_id = ${npcId} order by n.embedded desc, l.created_at, l.id limit ${MAX_BOOKS_PER_NPC}`;
  return rows.map((r) => r.book);
}

export async function listLorebooks(sql: Sql, playerId: string) {
  return sql<{ id: string; name: string; entries: number; npcIds: string[]; embedded: boolean }[]>`
    select l.id, l.name, jsonb_array_length(l.book->'entries') as entries,
      coalesce((select array_agg(n.npc_id) from npc_lorebooks n where n.lorebook_id = l.id), '{}') as "npcIds",
      exists (select 1 from npc_lorebooks n where n.lorebook_id = l.id and n.embedded) as embedded
    from lorebooks l where l.player_id = ${playerId} order by l.created_at, l.id`;
}

/** Attaches the Player's World Info lorebooks to their NPC, replacing the ones attached before (not its own). */
export async function attachBooks(
  tx: Queryable,
  playerId: string,
  npcId: string,
  ids: string[],
): Promise<boolean> {
  const owned = await tx<{ id: string }[]>`
    select id from lorebooks where player_id = ${playerId} and id = any(${ids}::uuid[])
      and id not in (select lorebook_id from npc_lorebooks where embedded)`;
  if (owned.length !== new Set(ids).size) return false;
  await tx`delete from npc_lorebooks where npc_id = ${npcId} and not embedded`;
  for (const { id } of owned)
    await tx`insert into npc_lorebooks (npc_id, lorebook_id) values (${npcId}, ${id})`;
  return true;
}

/** An NPC's lorebooks, whole, for its editor: its own first, then those attached (the prompt's order). */
export async function npcLorebooks(sql: Sql, npcId: string) {
  return sql<{ id: string; name: string; embedded: boolean; book: Lorebook }[]>`
    select l.id, l.name, n.embedded, l.book from npc_lorebooks n join lorebooks l on l.id = n.lorebook_id
    where n.npc_id = ${npcId} order by n.embedded desc, l.created_at, l.id limit ${MAX_BOOKS_PER_NPC}`;
}

/** Replaces a Player's lorebook with `book` (an edit of its entries); false when it is not theirs. */
export async function replaceLorebook(
  sql: Queryable,
  playerId: string,
  id: string,
  book: Lorebook,
): Promise<boolean> {
  const rows = await sql`update lorebooks
    set book = ${sql.json(book as unknown as JsonValue)},
      name = ${typeof book.name === 'string' ? book.name.slice(0, 200) : ''}
    where id = ${id} and player_id = ${playerId} returning id`;
  return rows.length === 1;
}

/** Deletes a Player's lorebook (from every NPC it is attached to); false when it is not theirs. */
export async function deleteLorebook(sql: Queryable, playerId: string, id: string): Promise<boolean> {
  const rows = await sql`delete from lorebooks where id = ${id} and player_id = ${playerId} returning id`;
  return rows.length === 1;
}
