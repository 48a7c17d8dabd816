import { isMessageOf, pathRoles } from '../conversations/index.ts';
import type { Queryable, Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { repliesToHold } from './review.ts';
import { getDraft } from './store.ts';

/**
 * The hold-back window of live publishing (ADR 0043, 0046): when turns come onto the path, the next append waits
 * the delay, and during it the Player may hold a turn back; a held-back question holds its replies too.
 */

/**
 * Turns came onto the path — a turn ended (told before its claim is released), a reply was settled
 * interrupted after its server died, or another branch was shown: for each live Conversation the append is due
 * after the delay, and the moment is dated so no append takes those turns sooner; replies to a held-back
 * question are held with it. One statement for Conversations that are not live.
 */
export async function turnEnded(sql: Sql, conversationIds: string | readonly string[]): Promise<void> {
  const ids = [...new Set(typeof conversationIds === 'string' ? [conversationIds] : conversationIds)];
  if (ids.length === 0) return;
  await heldBack(sql, await sql<{ id: string }[]>`${turnEndedSql(sql, ids)}`);
}

/**
 * turnEnded's statement, to be composed into another (the turn's release of its claim: one round trip at the end
 * of every turn, not two). Returns the live Conversations (`id`), for `heldBack` to finish with.
 */
export const turnEndedSql = (q: Queryable, ids: readonly string[]) =>
  q`update publications set live_due_at = now() + make_interval(secs => live_delay_seconds),
      live_turn_ended_at = now()
    where conversation_id = any(${ids}::uuid[]) and live
    returning conversation_id as id`;

/** The rest of turnEnded for the live Conversations its statement returned: their replies held with their question. */
async function heldBack(sql: Queryable, live: readonly { id: string }[]): Promise<void> {
  for (const { id } of live) await holdReplies(sql, id);
}

/** turnEnded for one Conversation as the turn's release takes it: its statement, and what follows it (never throws). */
export const liveTurnEnd = (sql: Sql, log: (message: string, error: unknown) => void) => ({
  sql: (q: Queryable, id: string) => turnEndedSql(q, [id]),
  after: (live: { id: string }[]) => heldBack(sql, live).catch((e) => log('could not hold replies back', e)),
});

/**
 * Holds a turn back before it goes out: it will be published withheld (a visible hole) until the Player
 * releases it from the publish page; a Player turn's replies with it. Only for turns not yet published.
 */
export async function holdBack(sql: Sql, playerId: string, conversationId: string, messageId: string) {
  // Any record of it, written or about to be: it is on its way out, or out (the caller holds the lock).
  const [known, [row]] = await Promise.all([
    isMessageOf(sql, playerId, conversationId, messageId),
    sql<{ published: boolean }[]>`
      select exists (select 1 from publication_records where conversation_id = ${conversationId}
        and message_id = ${messageId}) as published`,
  ]);
  if (!known) throw new AppError('NOT_FOUND', 'There is no such Message in this Conversation.');
  if (row?.published)
    throw new AppError(
      'ALREADY_PUBLISHED',
      'That turn has gone out already: withhold it from the publish page.',
    );
  const updated = await sql`update publication_drafts
    set choices = jsonb_set(choices, array[${messageId}::text],
      coalesce(choices -> ${messageId}::text, '{}'::jsonb) || '{"withheld": true}'::jsonb)
    where conversation_id = ${conversationId}`;
  if (updated.count === 0) throw new AppError('NOT_PUBLISHED', 'This Conversation is not published.');
  await holdReplies(sql, conversationId);
}

/**
 * Marks withheld, in the draft, the unpublished replies to a withheld Player turn that the Player has not
 * chosen for (see repliesToHold): the publish page then shows them held, and the Player may release them there.
 */
export async function holdReplies(sql: Queryable, conversationId: string): Promise<void> {
  const [path, draft, out] = await Promise.all([
    pathRoles(sql, conversationId),
    getDraft(sql, conversationId),
    sql<{ id: string }[]>`select message_id as id from publication_records
      where conversation_id = ${conversationId} and message_id is not null`,
  ]);
  if (!draft) return;
  const ids = repliesToHold(path, draft.choices, new Set(out.map((r) => r.id)));
  if (ids.length === 0) return;
  // Merged in the statement (a choice made meanwhile is kept), and never over an explicit choice.
  await sql`update publication_drafts set choices = choices || coalesce((
      select jsonb_object_agg(id, coalesce(choices -> id, '{}'::jsonb) || '{"withheld": true}'::jsonb)
      from unnest(${ids}::text[]) as id where choices -> id -> 'withheld' is null), '{}'::jsonb)
    where conversation_id = ${conversationId}`;
}
