import { type JsonValue, LIVE_INSTANCES, type Queryable, type Sql, transaction } from '../db/index.ts';
import { type Part, readParts } from '../parts/index.ts';
import type { Npc } from '../village/index.ts';
import { pathLeaf } from './branches.ts';
import {
  type Message,
  type MessageRow,
  type MessageStatus,
  messageColumns,
  settle,
  toMessage,
  type Usage,
} from './messages.ts';
import { villageSlot } from './spending.ts';
import { releaseSql, type TurnRelease } from './turnStore.ts';

// A reply's writes: its row, its checkpoints and its end (with what it cost and, when the turn ends with it, the
// claim released), tokens charged as its steps end, and replies left streaming marked interrupted.

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
  /** The turn ends with this reply: its claim is released in the same statement (one commit fewer per turn). */
  release?: TurnRelease,
): Promise<{ id: string }[]> {
  const { parts, text } = settle(end.parts, end.status);
  const u = end.usage;
  const tokens = Math.max(
    0,
    (u?.inputTokens ?? 0) + (u?.outputTokens ?? 0) + (end.estimatedTokens ?? 0) - (end.chargedTokens ?? 0),
  );
  // One statement: the reply's row, and what it cost added to its Player's day and then (reading the Player's row
  // written, so always in that order: no two ends wait on each other crosswise) to the Player's slot of the Village's;
  // and, when the turn ends here, its claim released with what must be told with it (returned).
  // The release reads `done`, so the reply's row is locked before the Conversation's, in the order a branch's
  // path change takes them (setPath): taken the other way round, the two could deadlock. (A reply's row goes only
  // with its Conversation, or under another claim, a regenerate after this instance was taken for dead: `done` is
  // empty only when this claim has nothing left to release.)
  const released = release
    ? sql`, released as (${releaseSql(sql, release)} and exists (select 1 from done))`
    : sql``;
  const told = release?.told
    ? sql`, told as (${release.told})`
    : sql`, told as (select null::uuid as id where false)`;
  return sql<{ id: string }[]>`
    with done as (
      update messages set parts = ${sql.json(parts as JsonValue)}, text = ${text}, status = ${end.status},
        error = ${end.error}, input_tokens = ${u?.inputTokens ?? null}, output_tokens = ${u?.outputTokens ?? null},
        reasoning_tokens = ${u?.reasoningTokens ?? null}, cached_input_tokens = ${u?.cachedInputTokens ?? null},
        cost_usd = ${end.costUsd}, instance_id = null, updated_at = now()
      where id = ${id} returning conversation_id),
    mine as (
      insert into daily_spend (day, player_id, tokens)
      select (now() at time zone 'utc')::date, c.player_id, ${tokens}::bigint
      from conversations c join done on c.id = done.conversation_id
      where ${tokens}::bigint > 0
      on conflict (day, player_id) do update set tokens = daily_spend.tokens + excluded.tokens
      returning player_id),
    village as (
      insert into village_spend (day, slot, tokens)
      select (now() at time zone 'utc')::date, ${villageSlot(sql, sql`mine.player_id`)}, ${tokens}::bigint from mine
      on conflict (day, slot) do update set tokens = village_spend.tokens + excluded.tokens)
    ${released} ${told}
    select id from told`;
}

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
  const n = Math.ceil(tokens);
  // The Village's total is its other slots as this statement's snapshot saw them, plus this slot as written: a
  // charge still in flight in another slot may be missing, as a turn admitted beside another cannot see that one.
  const [row] = await sql<{ mine: number; village: number }[]>`
    with mine as (
      insert into daily_spend (day, player_id, tokens) values ((now() at time zone 'utc')::date, ${playerId}, ${n})
      on conflict (day, player_id) do update set tokens = daily_spend.tokens + excluded.tokens
      returning tokens),
    ours as (
      insert into village_spend (day, slot, tokens)
      select (now() at time zone 'utc')::date, ${villageSlot(sql, playerId)}, ${n} from mine
      on conflict (day, slot) do update set tokens = village_spend.tokens + excluded.tokens
      returning slot, tokens)
    select (select tokens from mine)::float8 as mine,
      ((select tokens from ours) + coalesce((select sum(v.tokens) from village_spend v
        where v.day = (now() at time zone 'utc')::date and v.slot <> (select slot from ours)), 0))::float8 as village`;
  return row;
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
 * "streaming" for ever, but interrupted with what had arrived: the Parts this server still holds (what came after
 * the last checkpoint too), else the last checkpoint.
 */
export async function markUnfinished(sql: Sql, replies: { id: string; parts?: Part[] }[]): Promise<void> {
  const error = 'The reply could not be completed; what had arrived is kept.';
  const ids = replies.filter((r) => !r.parts).map((r) => r.id);
  for (const r of replies.filter((r) => r.parts)) {
    const { parts, text } = settle(r.parts!, 'interrupted');
    // If the Parts themselves cannot be written (what failed the final write may fail this too), the status is.
    await sql`update messages set status = 'interrupted', instance_id = null, updated_at = now(), error = ${error},
        parts = ${sql.json(parts as JsonValue)}, text = ${text}
      where id = ${r.id} and status = 'streaming'`.catch(() => ids.push(r.id));
  }
  if (ids.length)
    await sql`update messages set status = 'interrupted', instance_id = null, updated_at = now(), error = ${error}
      where id = any(${ids}::uuid[]) and status = 'streaming'`;
}

/**
 * Whether a reply's row is stored, asked when the COMMIT that wrote it went unanswered: it may have been made, or
 * be still being made by a backend whose client has gone. The Conversation's row, which the claim locked, is
 * locked first (5 s at most): once it is had, that transaction has ended, one way or the other.
 */
export async function replyStored(sql: Sql, conversationId: string, messageId: string): Promise<boolean> {
  await transaction(sql, async (tx) => {
    await tx`set local lock_timeout = '5s'`;
    await tx`select 1 from conversations where id = ${conversationId} for update`;
  });
  return (await sql`select 1 from messages where id = ${messageId}`).length > 0;
}

/**
 * Ends a turn whose claim was not known to be stored (its COMMIT went unanswered and the database could not be
 * asked). If the reply's row exists, the claim was stored: the row is marked interrupted if still streaming
 * (`ended`; a sweep may have marked it first), and the Conversation's claim released (`released`) while this
 * instance holds it and no later claim has been made. The claim is then this turn's: a Conversation is claimed by
 * one turn at a time, and a later claim (a regenerate, one taken while this instance was taken for dead) wrote
 * Messages after the reply's and dated the Conversation after it (`updated_at`, which the claim and its reply's row
 * take from one transaction). The date is what a claim being committed meanwhile is caught by: PostgreSQL judges a
 * row it waited for by its new version, the statement's other reads by the snapshot from before.
 *
 * The Conversation's row is locked first (5 s at most; past that the lock timeout's error is thrown, to ask again
 * later): a claim whose COMMIT is still being made (a database that hangs) holds it, and its reply's row is not yet
 * seen; it would be taken for a claim never stored, and the Conversation left claimed once the COMMIT lands.
 */
export async function endUndecided(
  sql: Sql,
  r: { conversationId: string; messageId: string; instanceId: number },
): Promise<{ stored: boolean; ended: boolean; released: boolean }> {
  // An ended pool answers this at once; its reserve would wait for ever (postgres.js 3.4.9).
  await sql`select 1`;
  const row = await transaction(sql, async (tx) => {
    await tx`set local lock_timeout = '5s'`;
    await tx`select 1 from conversations where id = ${r.conversationId} for update`;
    return (await endUndecidedSql(tx, r))[0];
  });
  return { stored: row?.stored === true, ended: row?.ended === true, released: row?.released === true };
}

const endUndecidedSql = (
  q: Queryable,
  r: { conversationId: string; messageId: string; instanceId: number },
) =>
  q<{ stored: boolean; ended: boolean; released: boolean }[]>`
    with reply as (select seq, created_at from messages
      where id = ${r.messageId} and conversation_id = ${r.conversationId}),
    ended as (update messages set status = 'interrupted', instance_id = null, updated_at = now(),
        error = 'The database could not be reached when this Message was sent, so no NPC was asked.'
      where id = ${r.messageId} and conversation_id = ${r.conversationId} and status = 'streaming'
      returning id),
    released as (update conversations c set turn_owner = null
      from reply
      where c.id = ${r.conversationId} and c.turn_owner = ${r.instanceId} and c.updated_at <= reply.created_at
        and not exists (select 1 from messages m where m.conversation_id = ${r.conversationId} and m.seq > reply.seq)
      returning c.id)
    select exists (select 1 from reply) as stored, exists (select 1 from ended) as ended,
      exists (select 1 from released) as released`;
