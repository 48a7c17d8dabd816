import { markInterrupted, messageIds, turnAndPath } from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import type { Choices } from '../redaction/index.ts';
import { holdReplies, turnEnded } from './hold.ts';
import { extendsReviewed } from './review.ts';
import { type PublishDeps, publish } from './service.ts';
import { getDraft, withPublicationLock } from './store.ts';

/**
 * Live publishing (ADR 0043, 0046): a published Conversation marked live has each new turn appended to its
 * session once the turn is complete and a delay has passed, in the background, by whichever server takes it
 * first — only while the path shown extends the one the Player reviewed and published.
 * New turns get the choice made in advance (published, or withheld); during the delay the Player can hold a
 * turn back. Turning live off stops appending; nothing already published changes.
 */
export interface LiveSettings {
  live: boolean;
  withholdNew: boolean;
  delaySeconds: number;
}

export async function setLive(sql: Sql, playerId: string, conversationId: string, s: LiveSettings) {
  const [row] = await sql`
    update publications set live = ${s.live}, live_withhold = ${s.withholdNew},
      live_delay_seconds = ${s.delaySeconds}, live_due_at = case when ${s.live} then live_due_at end,
      updated_at = now()
    where conversation_id = ${conversationId} and player_id = ${playerId}
      and status in ('publishing', 'published', 'failed')
    returning conversation_id`;
  if (!row)
    throw new AppError(
      'NOT_PUBLISHED',
      'Publish the Conversation first; then its new turns can follow live.',
    );
}

/**
 * Takes one due append, if any, and publishes it: turns on the path not yet published and not chosen for get
 * the choice made in advance. `skip locked` and clearing the due time make one server take each append.
 */
export async function runDueAppend(deps: PublishDeps): Promise<boolean> {
  const [due] = await deps.sql<
    { conversationId: string; playerId: string; did: string; withhold: boolean }[]
  >`
    update publications set live_due_at = null
    where conversation_id = (
      select conversation_id from publications where live and live_due_at <= now() and status = 'published'
      order by live_due_at limit 1 for update skip locked)
    returning conversation_id as "conversationId", player_id as "playerId", did, live_withhold as withhold`;
  if (!due) return false;
  await withPublicationLock(deps.leases, due.conversationId, () => append(deps, due));
  return true;
}

async function append(
  deps: PublishDeps,
  due: { conversationId: string; playerId: string; did: string; withhold: boolean },
): Promise<void> {
  // Under the lock, again: an unpublish or "live off" that came first wins, and nothing is brought back.
  const [still] = await deps.sql`select 1 from publications
    where conversation_id = ${due.conversationId} and live and status = 'published'`;
  if (!still) return;
  // A reply whose server died is settled first, and that starts its hold-back window as a turn's end does:
  // it is not sent out in the same step (ADR 0046).
  await turnEnded(deps.sql, await markInterrupted(deps.sql));
  // Only once the Conversation is quiet: no turn running (a Party's next reply may not have begun yet), and the
  // last turn's delay has passed — a retry must not catch a turn that has only just ended. The path is read in
  // the same statement: the append publishes exactly it, or nothing (see below).
  // The Conversation first, the publication after: a turn that ends in between has dated its end already.
  const turn = await turnAndPath(deps.sql, due.conversationId);
  const [publication] = await deps.sql<{ wait: Date | null; reviewed: string[] }[]>`
    select case when live_turn_ended_at + make_interval(secs => live_delay_seconds) > now()
        then live_turn_ended_at + make_interval(secs => live_delay_seconds) end as wait,
      reviewed_path::text[] as reviewed
    from publications where conversation_id = ${due.conversationId}`;
  const quiet = turn && publication && { ...turn, ...publication };
  if (!quiet) return;
  // The path no longer starts with what the Player reviewed (another branch shown, an edit, a regenerated
  // reply): paused until they review and publish again. Nothing is sent, deleted or rewritten.
  if (!extendsReviewed(quiet.path, quiet.reviewed)) return;
  if (quiet.busy || quiet.wait) {
    const at = quiet.wait ?? new Date(Date.now() + 2000);
    await deps.sql`update publications set live_due_at = greatest(coalesce(live_due_at, ${at}), ${at})
      where conversation_id = ${due.conversationId} and live`;
    return;
  }
  try {
    // A held-back question holds its replies, even those that came after the hold.
    await holdReplies(deps.sql, due.conversationId);
    const choices: Choices = {};
    if (due.withhold) {
      const [draft, path, out] = await Promise.all([
        getDraft(deps.sql, due.conversationId),
        messageIds(deps.sql, due.conversationId),
        deps.sql<{ id: string }[]>`select message_id as id from publication_records
          where conversation_id = ${due.conversationId} and message_id is not null`,
      ]);
      const published = new Set(out.map((r) => r.id));
      for (const id of path) if (!published.has(id) && !draft?.choices[id]) choices[id] = { withheld: true };
    }
    // With the path read above: if it moved since (a branch shown, a turn begun), nothing goes out
    // (CONVERSATION_CHANGED); whatever moved it makes the append due again.
    await publish(deps, { id: due.playerId, did: due.did }, due.conversationId, {
      choices,
      path: quiet.path,
    });
  } catch (e) {
    // A turn still being written: try again shortly. Anything else waits for the next turn, and is said.
    if (e instanceof AppError && e.code === 'TURN_IN_PROGRESS')
      await deps.sql`update publications set live_due_at = now() + interval '2 seconds'
        where conversation_id = ${due.conversationId} and live and live_due_at is null`;
    else if (!(e instanceof AppError && e.code === 'CONVERSATION_CHANGED'))
      deps.log(`live publishing of ${due.conversationId} could not append`, e);
  }
}

/** Every server looks for due appends every second (each taken by one). */
export function startLiveAppends(deps: PublishDeps, everyMs = 1000): () => void {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    (async () => {
      // Several due at once are taken one after another, within this tick.
      for (let i = 0; i < 20 && (await runDueAppend(deps)); i++);
    })()
      .catch((e) => deps.log('live publishing sweep failed', e))
      .finally(() => {
        busy = false;
      });
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
