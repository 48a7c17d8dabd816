import { collectBlobs } from '../attachments/index.ts';
import { type JsonValue, LIVE_INSTANCES, type Queryable, type Sql, transaction } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { expandMacros } from '../macros/index.ts';
import { type AttachmentPart, attachmentsOf, type Part, readParts } from '../parts/index.ts';
import { COUNT_LOCK, listNpcs, type Npc, npcColumns } from '../village/index.ts';
import { branchHead, pathLeaf, setPath } from './branches.ts';
import {
  type Message,
  type MessageRow,
  type MessageStatus,
  settle,
  titleFrom,
  toMessage,
  type Usage,
} from './messages.ts';
import {
  judgeSpending,
  lockSpending,
  logTurn,
  type SpendingLimits,
  type Spent,
  spendingCtes,
  VILLAGE,
} from './spending.ts';

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

const messageColumns = (sql: Queryable) => sql`
  id, seq::text as seq, role, npc_id, npc_name, parts, text, status, error, provider, model,
  input_tokens, output_tokens, reasoning_tokens, cached_input_tokens, cost_usd, created_at, parent_id`;

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

export async function listConversations(
  sql: Sql,
  playerId: string,
  opts: { limit: number; before?: { updatedAt: Date; id: string } },
): Promise<ListedConversation[]> {
  const b = opts.before;
  return sql<ListedConversation[]>`
    select ${conversationColumns(sql)},
      coalesce((select array_agg(p.npc_id order by p.position) from conversation_participants p
        where p.conversation_id = c.id), '{}') as "npcIds",
      (select pub.status from publications pub where pub.conversation_id = c.id) as publication
    from conversations c
    where player_id = ${playerId}
      ${b ? sql`and (updated_at, id) < (${b.updatedAt}, ${b.id})` : sql``}
    order by updated_at desc, id desc
    limit ${opts.limit}`;
}

/** Scoped by the caller: another Player's Conversation is indistinguishable from a missing one. */
export async function getConversation(
  sql: Sql,
  playerId: string,
  id: string,
): Promise<Conversation | undefined> {
  const [row] = await sql<Conversation[]>`
    select ${conversationColumns(sql)} from conversations where id = ${id} and player_id = ${playerId}`;
  return row;
}

/** The Conversation's NPCs, in the order they joined. */
export async function getParticipants(sql: Sql, conversationId: string): Promise<Npc[]> {
  return sql<Npc[]>`
    select ${npcColumns(sql)}
    from conversation_participants p join npcs on npcs.id = p.npc_id
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
        select blob_id from attachments where conversation_id = gone.id
        union select blob_id from sandbox_files where conversation_id = gone.id and blob_id is not null
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

const turnInProgress = () =>
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
type PendingFragment = ReturnType<Queryable>;

/** The first reply's row, written with the claim: its id is in the start frame, with no further round trip. */
export interface FirstReply {
  npc: Pick<Npc, 'id' | 'name'>;
  provider: string;
  model: string;
}
const insertReply = (
  q: Queryable,
  r: FirstReply,
  instanceId: number,
  after: PendingFragment,
  /** The Message it answers (its parent in the tree). */
  parent: PendingFragment,
) => q`
  insert into messages (conversation_id, role, npc_id, npc_name, parts, text, status, provider, model, instance_id,
    parent_id)
  select (select id from claimed), 'npc', ${r.npc.id}, ${r.npc.name}, '[]', '', 'streaming', ${r.provider},
    ${r.model}, ${instanceId}, ${parent}
  -- Selecting from the Player's row (when there is one) makes this insert run after it: its seq is later.
  from ${after}
  returning id`;

/**
 * A turn begun: the Player's Message, the first reply's row, and the rolling summary as the claim found it —
 * after this turn's own branch and any switch before it, so the turn sends the summary of its path.
 */
export interface Begun {
  playerMessage: Message;
  replyId: string;
  summary: Pick<Conversation, 'summary' | 'summaryThrough'>;
}

/**
 * Checks what the Player may spend, claims the Conversation for one turn and writes the Player's Message, in
 * one transaction: when the claim fails nothing is inserted and the answer is 409; over a limit, 429.
 */
export async function beginPlayerTurn(
  sql: Sql,
  args: {
    conversationId: string;
    playerId: string;
    instanceId: number;
    text: string;
    /** Uploads of this Conversation not yet sent (checked by the caller): linked to the new Message. */
    attachments?: readonly AttachmentPart[];
    limits: SpendingLimits;
    reply: FirstReply;
    /** Start a branch: the Message goes after `parentId` (null: as a new first Message), not after the head. */
    branchFrom?: { parentId: string | null };
  },
): Promise<Begun> {
  const attached = args.attachments ?? [];
  // A Message of attachments alone is titled by the first one's name.
  const first = attached[0];
  const title = titleFrom(
    args.text || (first ? (first.type === 'file' ? first.name : (first.title ?? first.url)) : ''),
  );
  return transaction(sql, async (tx) => {
    // Two round trips: BEGIN, the Player's lock and one statement pipelined, then COMMIT. The statement reads
    // what the Player has spent, and only when that admits the turn claims the Conversation, counts the turn,
    // and writes the Player's Message and the reply's row after it. COMMIT waits for it: postgres.js re-sends a
    // prepared statement whose plan went stale, and behind a COMMIT the re-sent one would run outside the
    // transaction and the lock. A refusal thrown here rolls back, so nothing is claimed.
    const locked = lockSpending(tx, args.playerId);
    // A branch moves the path first; a refused turn rolls it back with everything else.
    if (args.branchFrom) await branchAt(tx, args.conversationId, args.playerId, args.branchFrom.parentId);
    const list = [...(args.text ? [{ type: 'text', text: args.text }] : []), ...attached];
    const parts = tx.json(list as JsonValue);
    // Its bytes as the storage quota counts them (near enough: jsonb's text puts a space after each separator).
    const incoming = Buffer.byteLength(JSON.stringify(list));
    const [row] = await tx<
      (Spent &
        Partial<MessageRow> & { reply_id: string | null; claimed_summary: string; claimed_through: string })[]
    >`
      with ${spendingCtes(tx, args.playerId, args.conversationId, args.limits, incoming)},
      claimed as (${claimSql(tx, args.conversationId, args.playerId, args.instanceId, title, tx`exists (select 1 from admitted)`)}),
      ${logTurn(tx, args.playerId)},
      player as (
        insert into messages (conversation_id, role, parts, text, parent_id)
        select id, 'player', ${parts}, ${args.text}, ${pathLeaf(tx, args.conversationId)} from claimed
        returning ${messageColumns(tx)}),
      ${attached.length ? linkAttachments(tx, args.conversationId, attached) : tx``}
      reply as (${insertReply(tx, args.reply, args.instanceId, tx`player`, tx`player.id`)})
      select spend.*, player.*, (select id from reply) as reply_id,
        (select summary from claimed) as claimed_summary, (select summary_through from claimed) as claimed_through
      from spend left join player on true`;
    await locked;
    judgeSpending(row!, args.limits);
    if (!row?.id || !row.reply_id) throw turnInProgress();
    return {
      playerMessage: toMessage(row as MessageRow),
      replyId: row.reply_id,
      summary: { summary: row.claimed_summary, summaryThrough: row.claimed_through },
    };
  });
}

/** Moves the path so the next Message follows `parentId`, which must be a Message of this Conversation. */
async function branchAt(tx: Queryable, conversationId: string, playerId: string, parentId: string | null) {
  if (parentId !== null) {
    const [found] = await tx`select 1 from messages m join conversations c on c.id = m.conversation_id
      where m.id = ${parentId} and c.id = ${conversationId} and c.player_id = ${playerId}`;
    if (!found) throw new AppError('NOT_FOUND', 'There is no such Message in this Conversation.');
  }
  await setPath(tx, conversationId, parentId);
}

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

/** The admission statement's step that hands the Message its uploads (only when it has some). */
const linkAttachments = (q: Queryable, conversationId: string, attached: readonly AttachmentPart[]) => q`
  linked as (
    update attachments set message_id = (select id from player)
    where id = any(${attached.map((a) => a.id)}::uuid[]) and conversation_id = ${conversationId}
      and message_id is null and exists (select 1 from player)),`;

/**
 * Claims the Conversation to answer its last Player Message again: deletes the NPC Messages after it.
 * Returns the Player Message, which is not written again, and the new reply's row.
 */
export async function beginRegenerate(
  sql: Sql,
  args: {
    conversationId: string;
    playerId: string;
    instanceId: number;
    limits: SpendingLimits;
    reply: FirstReply;
  },
): Promise<Begun> {
  return transaction(sql, async (tx) => {
    // BEGIN, the lock and both reads in one round trip; the claim and COMMIT in a second.
    const locked = lockSpending(tx, args.playerId);
    const [[spent], [last]] = await Promise.all([
      tx<
        Spent[]
      >`with ${spendingCtes(tx, args.playerId, args.conversationId, args.limits)} select * from spend`,
      tx<MessageRow[]>`
        select ${messageColumns(tx)} from messages
        where conversation_id = ${args.conversationId} and role = 'player' and on_path
        order by messages.seq desc limit 1`,
    ]);
    await locked;
    judgeSpending(spent!, args.limits);
    if (!last) throw new AppError('NOTHING_TO_REGENERATE', 'There is no Player Message to answer again.');
    // The replies answered again leave the path but stay in the tree: the new one is their sibling, and the
    // Player can switch back (ADR 0042). A summary that covered them is rebuilt from the path.
    const [row] = await tx<{ reply_id: string | null; summary: string; summary_through: string }[]>`
      with claimed as (${claimSql(tx, args.conversationId, args.playerId, args.instanceId, null)}),
      ${logTurn(tx, args.playerId)},
      aside as (update messages set on_path = false
        where conversation_id = (select id from claimed) and on_path and seq > ${last.seq} returning seq),
      forgot as (update conversations set summary = '', summary_through = 0
        where id = (select id from claimed) and summary_through > ${last.seq} and exists (select 1 from aside)
        returning id),
      reply as (${insertReply(tx, args.reply, args.instanceId, tx`claimed`, tx`${last.id}::uuid`)})
      select (select id from reply) as reply_id,
        case when exists (select 1 from forgot) then '' else (select summary from claimed) end as summary,
        case when exists (select 1 from forgot) then '0' else (select summary_through from claimed) end
          as summary_through`;
    if (!row?.reply_id) throw turnInProgress();
    return {
      playerMessage: toMessage(last),
      replyId: row.reply_id,
      summary: { summary: row.summary, summaryThrough: row.summary_through },
    };
  });
}

/**
 * The claim: this server instance runs the Conversation's turn. A claim held by a dead instance is free (see
 * db/instance.ts), so a crash never leaves a Conversation locked. The row is updated unconditionally: the
 * title from the first 80 characters when it has none, and updated_at bumped (seed 003).
 */
const claimSql = (
  q: Queryable,
  conversationId: string,
  playerId: string,
  instanceId: number,
  title: string | null,
  /** A further condition (the spending check's `admitted`). */
  when: PendingFragment = q`true`,
) => q`
  update conversations set turn_owner = ${instanceId}, updated_at = now(), title = coalesce(title, ${title})
  where id = ${conversationId} and player_id = ${playerId} and ${when}
    and (turn_owner is null or turn_owner not in (${q.unsafe(LIVE_INSTANCES)}))
  returning id, summary, summary_through::text as summary_through`;

export async function releaseTurn(sql: Sql, conversationId: string, instanceId: number): Promise<void> {
  await sql`update conversations set turn_owner = null where id = ${conversationId} and turn_owner = ${instanceId}`;
}

/** The NPC's Message row, inserted before the first token so the start frame carries its real id. */
export async function insertNpcMessage(
  sql: Sql,
  args: {
    conversationId: string;
    npc: Pick<Npc, 'id' | 'name'>;
    provider: string;
    model: string;
    instanceId: number;
  },
): Promise<Message> {
  const [row] = await sql<MessageRow[]>`
    insert into messages (conversation_id, role, npc_id, npc_name, parts, text, status, provider, model, instance_id,
      parent_id)
    values (${args.conversationId}, 'npc', ${args.npc.id}, ${args.npc.name}, '[]', '', 'streaming',
      ${args.provider}, ${args.model}, ${args.instanceId}, ${pathLeaf(sql, args.conversationId)})
    returning ${messageColumns(sql)}`;
  return toMessage(row!);
}

/** Checkpoints of replies still streaming, in one statement: what has arrived so far of each. */
export async function checkpointMessages(
  sql: Sql,
  rows: { id: string; parts: Part[]; text: string }[],
): Promise<void> {
  if (!rows.length) return;
  await sql`update messages m set parts = v.parts, text = v.text, updated_at = now()
    from jsonb_to_recordset(${sql.json(rows as unknown as JsonValue)}) as v(id uuid, parts jsonb, text text)
    where m.id = v.id and m.status = 'streaming'`;
}

export async function finishMessage(
  sql: Sql,
  id: string,
  end: {
    parts: Part[];
    status: Exclude<MessageStatus, 'streaming'>;
    error: string | null;
    usage: Usage | null;
    costUsd: number | null;
    /** Charged to the daily budgets besides the usage reported: what the Provider did not count (a reply, or
     * its last step, stopped before the Provider's count came). */
    estimatedTokens?: number | null;
    /** Already charged while the reply ran (its steps, as each ended): only the rest is charged here. */
    chargedTokens?: number;
  },
): Promise<void> {
  const { parts, text } = settle(end.parts, end.status);
  const u = end.usage;
  const tokens = Math.max(
    0,
    (u?.inputTokens ?? 0) + (u?.outputTokens ?? 0) + (end.estimatedTokens ?? 0) - (end.chargedTokens ?? 0),
  );
  // One statement: the reply's row, and what it cost added to its Player's and the Village's day.
  await sql`
    with done as (
      update messages set parts = ${sql.json(parts as JsonValue)}, text = ${text}, status = ${end.status},
        error = ${end.error}, input_tokens = ${u?.inputTokens ?? null}, output_tokens = ${u?.outputTokens ?? null},
        reasoning_tokens = ${u?.reasoningTokens ?? null}, cached_input_tokens = ${u?.cachedInputTokens ?? null},
        cost_usd = ${end.costUsd}, instance_id = null, updated_at = now()
      where id = ${id} returning conversation_id)
    insert into daily_spend (day, player_id, tokens)
    select (now() at time zone 'utc')::date, who, ${tokens}::bigint
    from (select c.player_id as who from conversations c join done on c.id = done.conversation_id
          union all select ${VILLAGE}::uuid from done) spenders
    where ${tokens}::bigint > 0
    on conflict (day, player_id) do update set tokens = daily_spend.tokens + excluded.tokens`;
}

/** Tokens spent outside a reply (the rolling summary's calls), added to the Player's and the Village's day. */
/**
 * Adds tokens to the Player's and the Village's day; returns both days' totals after it (the same statement, so a
 * caller that asks the budget next needs no second read), or undefined when there was nothing to charge.
 */
export async function chargeTokens(
  sql: Sql,
  playerId: string,
  tokens: number,
): Promise<{ mine: number; village: number } | undefined> {
  if (!(tokens > 0)) return undefined;
  const rows = await sql<{ who: string; tokens: number }[]>`insert into daily_spend (day, player_id, tokens)
    select (now() at time zone 'utc')::date, who, ${Math.ceil(tokens)}::bigint
    from unnest(array[${playerId}::uuid, ${VILLAGE}::uuid]) as who
    on conflict (day, player_id) do update set tokens = daily_spend.tokens + excluded.tokens
    returning player_id::text as who, tokens::float8 as tokens`;
  return {
    mine: rows.find((r) => r.who === playerId)?.tokens ?? 0,
    village: rows.find((r) => r.who === VILLAGE)?.tokens ?? 0,
  };
}

/**
 * Replies left streaming by a server that is no longer alive are marked interrupted, keeping their last
 * checkpoint. Run at start; safe while other servers stream, since theirs are alive. Returns the Conversation of
 * each reply marked: the reply has ended, so live publishing starts its hold-back window (publish/hold.ts).
 */
export async function markInterrupted(sql: Sql): Promise<string[]> {
  const rows = await sql<{ id: string; conversationId: string; parts: unknown }[]>`
    select id, conversation_id as "conversationId", parts from messages
    where status = 'streaming' and (instance_id is null or instance_id not in (${sql.unsafe(LIVE_INSTANCES)}))`;
  const ended: string[] = [];
  for (const row of rows) {
    const { parts, text } = settle(readParts(row.parts), 'interrupted');
    const done =
      await sql`update messages set status = 'interrupted', parts = ${sql.json(parts as JsonValue)},
        text = ${text}, error = 'The server stopped while this reply was being written; what had arrived is kept.',
        instance_id = null, updated_at = now()
      where id = ${row.id} and status = 'streaming'`;
    if (done.count > 0) ended.push(row.conversationId);
  }
  return ended;
}

/**
 * Replies that ended without their final write (it failed) on a server that is still alive: not left
 * "streaming" for ever, but interrupted with their last checkpoint.
 */
export async function markUnfinished(sql: Sql, ids: string[]): Promise<void> {
  await sql`update messages set status = 'interrupted', instance_id = null, updated_at = now(),
      error = 'The reply could not be completed; what had arrived is kept.'
    where id = any(${ids}::uuid[]) and status = 'streaming'`;
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

export async function saveSummary(
  sql: Sql,
  conversationId: string,
  summary: string,
  through: string,
): Promise<void> {
  await sql`update conversations set summary = ${summary}, summary_through = ${through}
    where id = ${conversationId} and summary_through < ${through}`;
}

/** The text of the Player's last Message in a Conversation of theirs ('' when there is none). */
export async function lastPlayerText(sql: Sql, playerId: string, conversationId: string): Promise<string> {
  const [row] = await sql<{ text: string }[]>`
    select m.text from messages m join conversations c on c.id = m.conversation_id
    where c.id = ${conversationId} and c.player_id = ${playerId} and m.role = 'player' and m.on_path
    order by m.seq desc limit 1`;
  return row?.text ?? '';
}

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

/** Files an NPC shared in a reply belong to it: deleting or regenerating the reply takes them along. */
export async function linkShared(sql: Sql, conversationId: string, messageId: string, ids: string[]) {
  await sql`update attachments set message_id = ${messageId}
    where id = any(${ids}::uuid[]) and conversation_id = ${conversationId} and message_id is null`;
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
