import { type Fragment, LIVE_INSTANCES, type Queryable, type Sql } from '../db/index.ts';
import { type AttachmentPart, attachmentsOf, readParts } from '../parts/index.ts';
import { type Message, type MessageRow, messageColumns, toMessage } from './messages.ts';

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

/** The flattened text of each of `ids` that is a Message of the Conversation ('' for one with none). */
export async function messageTexts(
  sql: Sql,
  conversationId: string,
  ids: readonly string[],
): Promise<{ id: string; text: string }[]> {
  if (!ids.length) return [];
  return sql<{ id: string; text: string }[]>`select id, coalesce(text, '') as text from messages
    where conversation_id = ${conversationId} and id = any(${ids}::uuid[])`;
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

export interface HistoryRow {
  seq: string;
  role: 'player' | 'npc';
  npcId: string | null;
  npcName: string | null;
  text: string;
  /** A Player Message's attachments (file and url Parts), in order; empty otherwise. */
  attachments: AttachmentPart[];
}

/**
 * The history a turn needs: every Message after the rolling summary, oldest first. Once the summary keeps
 * up, that is the window plus what arrived since, so a long Conversation costs no more than a short one.
 */
export async function readHistoryTail(
  sql: Sql,
  conversationId: string,
  after: string,
): Promise<HistoryRow[]> {
  const rows = await sql<(Omit<HistoryRow, 'attachments'> & { attachments: unknown })[]>`
    select seq::text as seq, role, npc_id as "npcId", npc_name as "npcName", text,
      -- Most Player Messages are one text Part: only longer ones are searched for attachments.
      case when role = 'player' and jsonb_array_length(parts) > 1
        then jsonb_path_query_array(parts, '$[*] ? (@.type == "file" || @.type == "url")')
      end as attachments
    from messages
    where conversation_id = ${conversationId} and on_path and seq > ${after} and status <> 'streaming'
    order by messages.seq`;
  return rows.map((r) => ({
    ...r,
    attachments: r.attachments ? attachmentsOf(readParts(r.attachments)) : [],
  }));
}

/** The text of the Player's last Message on the path of a Conversation of theirs (what a regenerate answers
 * again; '' when there is none), as an expression of a larger statement. */
export const lastPlayerTextSql = (q: Queryable, playerId: string | Fragment, conversationId: string) =>
  q`coalesce((select m.text from messages m join conversations c on c.id = m.conversation_id
    where c.id = ${conversationId} and c.player_id = ${playerId} and m.role = 'player' and m.on_path
    order by m.seq desc limit 1), '')`;

/** The Messages on a Conversation's path, oldest first: what publishing reads (the current branch). */
export async function allMessages(sql: Sql, conversationId: string): Promise<Message[]> {
  const rows = await sql<MessageRow[]>`
    select ${messageColumns(sql)} from messages where conversation_id = ${conversationId} and on_path
    order by messages.seq`;
  return rows.map(toMessage);
}

/** The ids of the Messages on a Conversation's path, in order. */
export async function messageIds(sql: Sql, conversationId: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id from messages where conversation_id = ${conversationId} and on_path order by seq`;
  return rows.map((r) => r.id);
}

/**
 * One of the Player's NPC Messages in one of their Conversations, with the Player Message it answers (the last
 * one before it): what a viewer attaching to a reply needs. Another Player's is undefined.
 */
export async function getReply(
  sql: Sql,
  playerId: string,
  conversationId: string,
  messageId: string,
): Promise<(Message & { playerMessageId: string | null }) | undefined> {
  const [row] = await sql<(MessageRow & { player_message_id: string | null })[]>`
    select ${messageColumns(sql)},
      (with recursive up as (
         select p.id, p.parent_id, p.role, 0 as depth from messages p where p.id = m.parent_id
         union all
         select p.id, p.parent_id, p.role, up.depth + 1 from messages p join up on p.id = up.parent_id
         where up.role <> 'player' and up.depth < 50)
       select id from up where role = 'player' limit 1) as player_message_id
    from messages m
    where m.id = ${messageId} and m.conversation_id = ${conversationId} and m.role = 'npc'
      and exists (select 1 from conversations c where c.id = m.conversation_id and c.player_id = ${playerId})`;
  return row ? { ...toMessage(row), playerMessageId: row.player_message_id } : undefined;
}

/** A reply's status, and whether the server writing it is alive (a follower elsewhere asks: replies/mirror.ts). */
export async function replyState(
  sql: Sql,
  messageId: string,
): Promise<{ status: string; alive: boolean } | undefined> {
  const [row] = await sql<{ status: string; alive: boolean }[]>`
    select status, instance_id in (${sql.unsafe(LIVE_INSTANCES)}) as alive from messages where id = ${messageId}`;
  return row;
}

/** The ids of the replies being written now, on any server. */
export async function streamingReplies(sql: Sql): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`select id from messages where status = 'streaming'`;
  return rows.map((r) => r.id);
}

/**
 * Whether the Conversation exists, as a condition of the caller's statement: a sandbox's pull reads its version and
 * this together (tools/ imports nothing of this room; the turn hands it in).
 */
export const conversationExistsSql = (q: Queryable, conversationId: string): ReturnType<Queryable> =>
  q`exists (select 1 from conversations where id = ${conversationId})`;

/** Which of `ids` are Conversations still stored (the sandbox copies of the others are swept). */
export async function existingConversations(sql: Sql, ids: readonly string[]): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`select id from conversations where id = any(${[...ids]}::uuid[])`;
  return rows.map((r) => r.id);
}

/** Whether the Conversation is the Player's: another Player's is as missing as one that never was. */
export async function isConversationOf(sql: Sql, playerId: string, conversationId: string): Promise<boolean> {
  const rows =
    await sql`select 1 from conversations where id = ${conversationId} and player_id = ${playerId}`;
  return rows.length > 0;
}

/** Whether `messageId` is a Message of this Conversation of this Player's. */
export async function isMessageOf(
  sql: Sql,
  playerId: string,
  conversationId: string,
  messageId: string,
): Promise<boolean> {
  const rows = await sql`select 1 from messages m join conversations c on c.id = m.conversation_id
    where m.id = ${messageId} and c.id = ${conversationId} and c.player_id = ${playerId}`;
  return rows.length > 0;
}

/** The Messages on a Conversation's path, in order, by id and role (what holding a question back reads). */
export async function pathRoles(
  q: Queryable,
  conversationId: string,
): Promise<{ id: string; role: 'player' | 'npc' }[]> {
  return q<{ id: string; role: 'player' | 'npc' }[]>`select id, role from messages
    where conversation_id = ${conversationId} and on_path order by seq`;
}

/**
 * Whether a turn is running in the Conversation (its claim held by a live server), and its path's Message ids
 * in order, read together (live publishing appends exactly this path, or nothing).
 */
export async function turnAndPath(
  sql: Sql,
  conversationId: string,
): Promise<{ busy: boolean; path: string[] } | undefined> {
  const [row] = await sql<{ busy: boolean; path: string[] }[]>`
    select c.turn_owner is not null and c.turn_owner in (${sql.unsafe(LIVE_INSTANCES)}) as busy,
      array(select m.id::text from messages m where m.conversation_id = c.id and m.on_path order by m.seq) as path
    from conversations c where c.id = ${conversationId}`;
  return row;
}
