import { collectBlobs, conversationBlobsSql } from '../attachments/index.ts';
import { type Fragment, LIVE_INSTANCES, type Queryable, type Sql, transaction } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { expandMacros } from '../macros/index.ts';
import { sandboxBlobsSql } from '../tools/index.ts';
import { COUNT_LOCK, listNpcs, type Npc, npcRowSql, type TurnColumns } from '../village/index.ts';
import { branchHead, setPath } from './branches.ts';
import { type Message, type MessageRow, messageColumns, toMessage } from './messages.ts';
import { lockSpending } from './spending.ts';

// Conversations and their transcripts as the Player reads and changes them. The turn's write side (claim, begin,
// checkpoint, finish, interrupted) is in turnStore.ts.

type PendingFragment = ReturnType<Queryable>;

export interface Conversation {
  id: string;
  title: string | null;
  summary: string;
  summaryThrough: string;
  /** In a Party: one NPC answers each Message, or each NPC in turn. */
  replyMode: 'one' | 'each';
  createdAt: Date;
  updatedAt: Date;
}

const conversationColumns = (sql: Queryable) => sql`
  id, title, summary, summary_through::text as "summaryThrough", reply_mode as "replyMode", created_at as "createdAt", updated_at as "updatedAt"`;
export async function createConversation(
  sql: Sql,
  playerId: string,
  npcIds: string[],
  title: string | null,
  max: number,
  /** Who `{{user}}` is in the greeting (the Player's handle). */
  user = 'the Player',
): Promise<Conversation> {
  const own = new Map((await listNpcs(sql, playerId)).map((n) => [n.id, n]));
  const unknown = npcIds.find((id) => !own.has(id));
  if (unknown) throw new AppError('UNKNOWN_NPC', `There is no NPC of yours with id ${unknown}.`);
  return transaction(sql, async (tx) => {
    const c = await insertConversation(tx, playerId, npcIds, title, max);
    const first = own.get(npcIds[0]!);
    if (first) await insertGreetings(tx, c.id, first, user);
    return c;
  });
}

/**
 * The NPC's greeting as the first Message of a new Conversation (a card's `first_mes`, as SillyTavern opens a
 * chat), and each alternate greeting a sibling of it, off the path: the Player swipes between them (‹ 1/3 ›) like
 * any branches. Macros are expanded as the Message is written, as SillyTavern writes them into the chat.
 */
async function insertGreetings(tx: Queryable, conversationId: string, npc: Npc, user: string): Promise<void> {
  const texts = [npc.greeting, ...npc.alternateGreetings]
    .map((g) => expandMacros(g, { char: npc.name, user }).text.trim())
    .filter(Boolean);
  const rows = texts.map((text, i) => ({
    conversation_id: conversationId,
    role: 'npc',
    npc_id: npc.id,
    npc_name: npc.name,
    parts: tx.json([{ type: 'text', text }]),
    text,
    status: 'complete',
    on_path: i === 0,
  }));
  // One by one, so their seqs keep the order the card gives them (the first is the one shown).
  for (const row of rows) await tx`insert into messages ${tx(row)}`;
}

/**
 * `createConversation` inside the caller's transaction, for NPC ids the caller knows are the Player's (an
 * import makes its NPCs, the Conversation and its Messages in one transaction).
 */
export async function insertConversation(
  tx: Queryable,
  playerId: string,
  npcIds: string[],
  title: string | null,
  max: number,
): Promise<Conversation> {
  await tx`select pg_advisory_xact_lock(${COUNT_LOCK}, hashtext(${playerId}))`;
  const [c] = await tx<Conversation[]>`
    insert into conversations (player_id, title) select ${playerId}, ${title}
    where (select count(*) from conversations where player_id = ${playerId}) < ${max}
    returning ${conversationColumns(tx)}`;
  if (!c) {
    throw new AppError(
      'TOO_MANY_CONVERSATIONS',
      `You have ${max.toLocaleString('en')} Conversations, the most this Village allows. Delete one to start another.`,
    );
  }
  const rows = [...new Set(npcIds)].map((npc_id, position) => ({ conversation_id: c.id, npc_id, position }));
  if (rows.length) await tx`insert into conversation_participants ${tx(rows)}`;
  return c;
}

type ListedConversation = Conversation & {
  npcIds: string[];
  publication: 'publishing' | 'published' | 'unpublishing' | 'failed' | null;
};

/**
 * A Conversation's publication status (null: not published) as a scalar subquery on its id: publish/ owns
 * publications and imports this room, so app.ts hands its builder in (publish's `publicationStatusSql`).
 */
export type PublicationStatusSql = (q: Queryable, conversationId: PendingFragment) => PendingFragment;

export async function listConversations(
  sql: Sql,
  playerId: string,
  opts: { limit: number; before?: { updatedAt: Date; id: string } },
  publicationStatus: PublicationStatusSql,
): Promise<ListedConversation[]> {
  const b = opts.before;
  return sql<ListedConversation[]>`
    select ${conversationColumns(sql)},
      coalesce((select array_agg(p.npc_id order by p.position) from conversation_participants p
        where p.conversation_id = c.id), '{}') as "npcIds",
      ${publicationStatus(sql, sql`c.id`)} as publication
    from conversations c
    where player_id = ${playerId}
      ${b ? sql`and (updated_at, id) < (${b.updatedAt}, ${b.id})` : sql``}
    order by updated_at desc, id desc
    limit ${opts.limit}`;
}

/** Scoped by the caller: another Player's Conversation is indistinguishable from a missing one. */
export async function getConversation(
  sql: Sql,
  /** The Player's id, or a subquery that gives it (the turn's session, read in the same round trip). */
  playerId: string | Fragment,
  id: string,
): Promise<Conversation | undefined> {
  const [row] = await sql<Conversation[]>`
    select ${conversationColumns(sql)} from conversations where id = ${id} and player_id = ${playerId}`;
  return row;
}

/**
 * `getConversation` and `getParticipants` as JSON expressions, for a statement that reads a turn's all in one
 * (turn/admit.ts); `conversationFromJson` and `npcFromJson` give their dates back.
 */
export const conversationJsonSql = (q: Queryable, playerId: Fragment, id: string) =>
  q`(select to_jsonb(c) from (select ${conversationColumns(q)} from conversations
    where id = ${id} and player_id = ${playerId}) c)`;

export const participantsJsonSql = (q: Queryable, conversationId: string, forTurn?: TurnColumns) =>
  q`(select coalesce(jsonb_agg(to_jsonb(n) order by p.position), '[]')
    from conversation_participants p cross join lateral (${npcRowSql(q, q`p.npc_id`, forTurn)}) n
    where p.conversation_id = ${conversationId})`;

export const conversationFromJson = (c: Conversation | null): Conversation | undefined =>
  c ? { ...c, createdAt: new Date(c.createdAt), updatedAt: new Date(c.updatedAt) } : undefined;

/** The Conversation's NPCs, in the order they joined; `forTurn` adds what a turn reads of them (`TurnColumns`). */
export async function getParticipants(
  sql: Sql,
  conversationId: string,
  forTurn?: TurnColumns,
): Promise<Npc[]> {
  return sql<Npc[]>`
    select n.* from conversation_participants p cross join lateral (${npcRowSql(sql, sql`p.npc_id`, forTurn)}) n
    where p.conversation_id = ${conversationId} order by p.position`;
}

export async function renameConversation(
  sql: Sql,
  playerId: string,
  id: string,
  title: string,
): Promise<boolean> {
  const rows =
    await sql`update conversations set title = ${title} where id = ${id} and player_id = ${playerId} returning id`;
  return rows.length > 0;
}

export async function setReplyMode(
  sql: Sql,
  playerId: string,
  id: string,
  mode: Conversation['replyMode'],
): Promise<boolean> {
  const rows =
    await sql`update conversations set reply_mode = ${mode} where id = ${id} and player_id = ${playerId} returning id`;
  return rows.length > 0;
}

export async function deleteConversation(sql: Sql, playerId: string, id: string): Promise<boolean> {
  try {
    // One statement: what its replies cost is kept (usage counts what was paid for), then it goes — but not
    // while a live server is writing its reply (that reply would go uncharged and uncounted).
    const rows = await sql`
      with gone as (
        delete from conversations where id = ${id} and player_id = ${playerId}
          and (turn_owner is null or turn_owner not in (${sql.unsafe(LIVE_INSTANCES)}))
        returning id, title),
      ${keepUsage(sql, playerId, sql`(select id from gone)`, sql`(select title from gone)`, sql`true`)}
      select id, array(
        ${conversationBlobsSql(sql, sql`gone.id`)} union ${sandboxBlobsSql(sql, sql`gone.id`)}
      ) as "blobIds" from gone`;
    if (rows.length > 0) {
      // Its attachments went with it; their bytes go too unless another attachment uses the same content.
      await collectBlobs(sql, rows[0]!.blobIds).catch(() => {});
      return true;
    }
    const [busy] = await sql`select 1 from conversations where id = ${id} and player_id = ${playerId}`;
    if (busy) throw turnInProgress();
    return false;
  } catch (e) {
    // A published Conversation is referenced by its publication: deleting it here would orphan the records
    // on the PDS with no way left to unpublish them from the app.
    if ((e as { code?: string }).code === '23503') {
      throw new AppError('PUBLISHED', 'This Conversation is published. Unpublish it first, then delete it.');
    }
    throw e;
  }
}

/** Every Message of a Conversation after `after` (a seq), every branch, oldest first, with whether it is on the path. */
export async function messagesAfter(
  sql: Sql,
  conversationId: string,
  after: string,
  limit: number,
): Promise<(Message & { onPath: boolean })[]> {
  const rows = await sql<(MessageRow & { on_path: boolean })[]>`
    select ${messageColumns(sql)}, on_path from messages
    where conversation_id = ${conversationId} and messages.seq > ${after} order by messages.seq limit ${limit}`;
  return rows.map((r) => ({ ...toMessage(r), onPath: r.on_path }));
}

/** The most a transcript page carries, in stored bytes (ADR 0053); a Message larger than this comes alone. */
export const PAGE_MAX_BYTES = 1024 * 1024;

/**
 * A page of Messages, oldest first, ending before `before` (a seq), or the latest page: at most `limit`
 * Messages and, past the first, no more than `maxBytes` of them (a page of long Messages stops early). `before`
 * in the answer is the cursor to the older ones, whichever bound ended the page.
 */
export async function listMessages(
  sql: Sql,
  conversationId: string,
  opts: { limit: number; before?: string; maxBytes?: number },
): Promise<{ messages: Message[]; before: string | null }> {
  const rows = await sql<(MessageRow & { fetched: number })[]>`
    with recent as (
      select id as rid, seq as rseq, stored_bytes as rbytes from messages
      where conversation_id = ${conversationId} and on_path ${opts.before ? sql`and seq < ${opts.before}` : sql``}
      order by seq desc limit ${opts.limit + 1}),
    sized as (
      select rid, sum(rbytes) over (order by rseq desc) - rbytes as ahead, count(*) over () as fetched
      from recent)
    select ${messageColumns(sql)}, sized.fetched::int as fetched, b.branch_index, b.branch_count,
      (select p.id from messages p where p.conversation_id = messages.conversation_id and p.seq = b.prev_seq)
        as branch_previous,
      (select n.id from messages n where n.conversation_id = messages.conversation_id and n.seq = b.next_seq)
        as branch_next
    from sized join messages on messages.id = sized.rid
    -- Where it stands among its siblings, as numbers and its two neighbours: a page's size does not grow with
    -- how often a Message was edited or regenerated (the whole list, once sent, made a 2,000-fork page 15 MB).
    cross join lateral (
      select count(*)::int as branch_count,
        count(*) filter (where s.seq < messages.seq)::int as branch_index,
        max(s.seq) filter (where s.seq < messages.seq) as prev_seq,
        min(s.seq) filter (where s.seq > messages.seq) as next_seq
      from (
        select s.seq from messages s where messages.parent_id is null
          and s.conversation_id = messages.conversation_id and s.parent_id is null
        union all
        select s.seq from messages s where s.parent_id = messages.parent_id
      ) s) b
    where sized.ahead < ${opts.maxBytes ?? PAGE_MAX_BYTES}
    order by messages.seq desc limit ${opts.limit}`;
  const page = rows.reverse();
  const more = (rows[0]?.fetched ?? 0) > page.length;
  return { messages: page.map(toMessage), before: more && page[0] ? page[0].seq : null };
}

export const turnInProgress = () =>
  new AppError(
    'TURN_IN_PROGRESS',
    'An NPC is still answering in this Conversation. Wait for it or stop it first.',
  );

/**
 * A CTE keeping the usage of replies about to be deleted (those of `conversation` matching `which`, as `m`):
 * the Provider was paid for them, so Usage still counts them.
 */
const keepUsage = (
  q: Queryable,
  playerId: string,
  conversation: PendingFragment,
  title: PendingFragment,
  which: PendingFragment,
) => q`
  kept_usage as (
    insert into discarded_usage (player_id, conversation_id, conversation_title, npc_id, npc_name, created_at,
      input_tokens, output_tokens, cost_usd)
    select ${playerId}, m.conversation_id, ${title}, m.npc_id, m.npc_name, m.created_at, m.input_tokens,
      m.output_tokens, m.cost_usd
    from messages m
    where m.conversation_id = ${conversation} and m.role = 'npc' and not m.imported and ${which}
      and (m.input_tokens is not null or m.output_tokens is not null or m.cost_usd is not null))`;

/**
 * Shows another branch: the path becomes the one through `messageId`, down its newest replies to where that
 * branch was left. Not while a reply is being written (the turn appends to the path).
 */
export async function switchBranch(sql: Sql, playerId: string, conversationId: string, messageId: string) {
  await transaction(sql, async (tx) => {
    // The Player's own lock, as a turn's admission takes it: a turn cannot begin while the path moves.
    await lockSpending(tx, playerId);
    await tx`set local statement_timeout = 5000`;
    const [c] = await tx<{ busy: boolean }[]>`
      select turn_owner is not null and turn_owner in (${tx.unsafe(LIVE_INSTANCES)}) as busy from conversations
      where id = ${conversationId} and player_id = ${playerId} for update`;
    if (!c) throw new AppError('NOT_FOUND', 'There is no such Conversation.');
    if (c.busy) throw turnInProgress();
    const head = await branchHead(tx, conversationId, messageId);
    if (!head) throw new AppError('NOT_FOUND', 'There is no such Message in this Conversation.');
    await setPath(tx, conversationId, head);
  });
}
