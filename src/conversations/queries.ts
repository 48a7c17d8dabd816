import type { Sql } from '../db/index.ts';

// Reads and small writes of Conversations and Messages that other rooms make: they call these instead of
// naming this room's tables (test/structure/tables.test.ts).

/** The id of every Message of a Conversation, on the path shown or not (a draft's choices may name any). */
export async function everyMessageId(sql: Sql, conversationId: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`select id from messages where conversation_id = ${conversationId}`;
  return rows.map((r) => r.id);
}

/** A Message's flattened text (null for one with none, or none at all). */
export async function messageText(sql: Sql, messageId: string): Promise<string | null> {
  const [row] = await sql<{ text: string | null }[]>`select text from messages where id = ${messageId}`;
  return row?.text ?? null;
}

/** A Conversation's title as it stands (undefined when there is no such Conversation). */
export async function titleOf(sql: Sql, conversationId: string): Promise<string | null | undefined> {
  const [row] = await sql<{ title: string | null }[]>`select title from conversations
    where id = ${conversationId}`;
  return row ? row.title : undefined;
}

/** Sets the title to `to` only while it is still `from` (the Player may have renamed it meanwhile). */
export async function retitle(sql: Sql, conversationId: string, from: string, to: string): Promise<boolean> {
  const [row] = await sql`update conversations set title = ${to}
    where id = ${conversationId} and title = ${from} returning id`;
  return row !== undefined;
}
