import { linkToMessageSql } from '../attachments/index.ts';
import {
  type Fragment,
  inOneTripAnswered,
  LIVE_INSTANCES,
  type Queryable,
  type Sql,
  transaction,
} from '../db/index.ts';
import { AppError } from '../http/index.ts';
import type { AttachmentPart } from '../parts/index.ts';
import type { Npc } from '../village/index.ts';
import { pathLeaf, setPath } from './branches.ts';
import { type Message, type MessageRow, messageColumns, titleFrom, toMessage } from './messages.ts';
import {
  holdsSpendingLock,
  judgeSpending,
  lockSpending,
  logTurn,
  type SpendingLimits,
  type Spent,
  spendingCtes,
} from './spending.ts';
import { type Conversation, turnInProgress } from './store.ts';

// The turn's write side: the claim and the turn begun (the Player's Message and the reply's row, after the
// spending check), the claim released, and the rolling summary saved. A reply's own writes are replyStore.ts's.

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
  /** What the Player and the Village had spent today, read by the claim under the Player's lock. */
  spentToday: { mine: number; village: number };
  /**
   * Settles once the claim is stored (its COMMIT flushed), rejecting if it was not: nothing that reads the turn's
   * rows from another connection, nor the Provider call, may start before. Absent when it was stored already.
   */
  committed?: Promise<void>;
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
    /** The Conversation had a title when the turn's reads were made: no title is made from this Message. */
    titled?: boolean;
    /** Uploads of this Conversation not yet sent (checked by the caller): linked to the new Message. */
    attachments?: readonly AttachmentPart[];
    limits: SpendingLimits;
    reply: FirstReply;
    /** Start a branch: the Message goes after `parentId` (null: as a new first Message), not after the head. */
    branchFrom?: { parentId: string | null };
  },
): Promise<Begun> {
  const attached = args.attachments ?? [];
  // A Message of attachments alone is titled by the first one's name. Only an untitled Conversation takes a title:
  // one the turn's reads found titled is sent none (the statement keeps whatever title it has).
  const first = attached[0];
  const title = args.titled
    ? null
    : titleFrom(
        args.text || (first ? (first.type === 'file' ? first.name : (first.title ?? first.url)) : ''),
      );
  const list = [...(args.text ? [{ type: 'text', text: args.text }] : []), ...attached];
  // Its bytes as the storage quota counts them (near enough: jsonb's text puts a space after each separator).
  // Sent as text (cast to jsonb), and counted from that text.
  const parts = JSON.stringify(list);
  const incoming = Buffer.byteLength(parts);
  // One statement reads what the Player has spent and, only when that admits the turn, claims the Conversation,
  // counts the turn, and writes the Player's Message and the reply's row after it.
  const claim = (tx: Queryable, when: PendingFragment) => tx<ClaimRow[]>`
      with ${spendingCtes(tx, args.playerId, args.conversationId, args.limits, incoming)},
      claimed as (${claimSql(tx, args.conversationId, args.playerId, args.instanceId, title, when)}),
      ${logTurn(tx, args.playerId)},
      player as (
        insert into messages (conversation_id, role, parts, text, parent_id)
        select id, 'player', ${parts}::text::jsonb, ${args.text}, ${pathLeaf(tx, args.conversationId)}
        from claimed
        returning ${messageColumns(tx)}),
      ${attached.length ? linkAttachments(tx, args.conversationId, attached) : tx``}
      reply as (${insertReply(tx, args.reply, args.instanceId, tx`player`, tx`player.id`)})
      select spend.*, player.*, (select id from reply) as reply_id,
        (select summary from claimed) as claimed_summary, (select summary_through from claimed) as claimed_through
      from spend left join player on true`;
  const { branchFrom } = args;
  if (branchFrom) {
    // A branch moves the path first, and a refused turn must roll that back: two round trips (BEGIN, the lock,
    // the move; then the statement, read before COMMIT).
    return transaction(sql, async (tx) => {
      const locked = lockSpending(tx, args.playerId);
      await branchAt(tx, args.conversationId, args.playerId, branchFrom.parentId);
      const [row] = await claim(tx, tx`exists (select 1 from admitted)`);
      await locked;
      return begunOrRefused(row, args.limits);
    });
  }
  // The hot path, one round trip: BEGIN, the Player's lock, the statement and COMMIT written together. The
  // statement writes only what it admits, so nothing it answers calls for a rollback. Answered before the COMMIT
  // is flushed (ADR 0099): the turn may be shown as begun at once, and waits for `committed` before it reads.
  const { out: row, committed } = await inOneTripAnswered(sql, async (tx) => {
    // Both awaited: should the lock fail (a timeout, a cancel), its error is the one thrown, not the claim's
    // "transaction is aborted".
    const [, [r]] = await Promise.all([
      lockSpending(tx, args.playerId),
      claim(tx, tx`exists (select 1 from admitted) and ${holdsSpendingLock(tx, args.playerId)}`).execute(),
    ]);
    return r;
  });
  return { ...begunOrRefused(row, args.limits), committed };
}

type ClaimRow = Spent &
  Partial<MessageRow> & { reply_id: string | null; claimed_summary: string; claimed_through: string };

/** The turn the statement admitted and wrote — or, when it wrote nothing, why: a limit reached, or a turn under way. */
function begunOrRefused(row: ClaimRow | undefined, limits: SpendingLimits): Begun {
  if (!row?.id || !row.reply_id) {
    if (row) judgeSpending(row, limits);
    throw turnInProgress();
  }
  return {
    playerMessage: toMessage(row as MessageRow),
    replyId: row.reply_id,
    summary: { summary: row.claimed_summary, summaryThrough: row.claimed_through },
    spentToday: { mine: row.mine, village: row.village },
  };
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

/** The admission statement's step that hands the Message its uploads (only when it has some). */
const linkAttachments = (q: Queryable, conversationId: string, attached: readonly AttachmentPart[]) => q`
  linked as (${linkToMessageSql(
    q,
    conversationId,
    attached.map((a) => a.id),
    q`(select id from player)`,
    q`exists (select 1 from player)`,
  )}),`;

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
      spentToday: { mine: spent!.mine, village: spent!.village },
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

/** The turn's claim, as held by this instance, and what must land in the statement that releases it. */
export interface TurnRelease {
  conversationId: string;
  instanceId: number;
  /** A statement returning rows of `id` (live publishing's turn end), sent in the same statement as the release. */
  told?: Fragment;
}

export const releaseSql = (q: Queryable, r: TurnRelease) =>
  q`update conversations set turn_owner = null where id = ${r.conversationId} and turn_owner = ${r.instanceId}`;

/** The turn's claim released, in one statement with `told` (what must land with it); returns `told`'s rows. */
export async function releaseTurn(sql: Sql, conversationId: string, instanceId: number, told?: Fragment) {
  const release = releaseSql(sql, { conversationId, instanceId });
  if (told) return sql<{ id: string }[]>`with told as (${told}), r as (${release}) select id from told`;
  await release;
  return [];
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
