import { markInterrupted, messageIds, turnAndPath } from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import type { Choices } from '../redaction/index.ts';
import { PublishPausedError } from './execute.ts';
import { holdReplies, turnEnded } from './hold.ts';
import { extendsReviewed } from './review.ts';
import { type PublishDeps, publish } from './service.ts';
import { getDraft, withPublicationLock } from './store.ts';
import { startSweep } from './sweep.ts';

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
      -- Off: what a failed append left pending is not sent in the background either (ADR 0091).
      retry_due_at = case when ${s.live} then retry_due_at end, updated_at = now()
    where conversation_id = ${conversationId} and player_id = ${playerId}
      and status in ('publishing', 'published', 'failed')
    returning conversation_id`;
  if (!row)
    throw new AppError(
      'NOT_PUBLISHED',
      'Publish the Conversation first; then its new turns can follow live.',
    );
}

/** How failed live appends are tried again (ADR 0077). */
export interface LiveRetry {
  /** The first wait; each failure in a row doubles it, up to an hour. */
  retryMs: number;
}

/** Past this many failures in a row, an append waits for the next turn (or a publish by hand), as before. */
export const LIVE_MAX_FAILURES = 12;
const LIVE_MAX_RETRY_MS = 3_600_000;

interface DueAppend {
  conversationId: string;
  playerId: string;
  did: string;
  withhold: boolean;
  /** Failures in a row before this append (live_failures). */
  failures: number;
}

/**
 * Takes one due append, if any, of a Player not in `busy`: `skip locked` and clearing the due time make one
 * server take each append. A publication a failed append left part-way ('failed') is taken too: the append
 * writes what it still needs.
 */
async function takeDue(deps: PublishDeps, busy: readonly string[]): Promise<DueAppend | undefined> {
  const [due] = await deps.sql<DueAppend[]>`
    update publications set live_due_at = null
    where conversation_id = (
      select conversation_id from publications
      where live and live_due_at <= now() and status in ('published', 'failed')
        and player_id <> all(${busy}::uuid[])
      order by live_due_at limit 1 for update skip locked)
    returning conversation_id as "conversationId", player_id as "playerId", did, live_withhold as withhold,
      live_failures as failures`;
  return due;
}

/**
 * Publishes a due append: turns on the path not yet published and not chosen for get the choice made in
 * advance. A failure makes it due again later.
 */
async function runAppend(deps: PublishDeps, due: DueAppend, retry: LiveRetry): Promise<void> {
  try {
    await withPublicationLock(deps.leases, due.conversationId, () => append(deps, due));
  } catch (e) {
    await failed(deps, due.conversationId, e, retry);
  }
}

/**
 * An append that failed (the PDS or its sign-in out of reach, a write refused, the lock busy) falls due again
 * after a wait that doubles with each failure in a row; the due time a turn set meanwhile stands if sooner.
 */
async function failed(deps: PublishDeps, conversationId: string, e: unknown, retry: LiveRetry) {
  // A PDS that said when it takes writes again (its rate limit) is not asked sooner.
  const cause = e instanceof Error ? e.cause : undefined;
  const notBefore = (cause instanceof PublishPausedError && cause.retryAt) || new Date(0);
  const [row] = await deps.sql<{ failures: number; dueAt: Date | null }[]>`
    update publications set live_failures = live_failures + 1,
      live_due_at = case when live_failures + 1 < ${LIVE_MAX_FAILURES} then least(
        coalesce(live_due_at, 'infinity'), greatest(${notBefore}::timestamptz,
          now() + make_interval(secs => least(${retry.retryMs}::float8 * 2 ^ live_failures, ${LIVE_MAX_RETRY_MS})
            / 1000))) else live_due_at end
    where conversation_id = ${conversationId} and live
    returning live_failures as failures, live_due_at as "dueAt"`;
  deps.log(
    `live publishing of ${conversationId} could not append (failure ${row?.failures ?? '?'} in a row; ${
      row?.dueAt ? `tried again at ${row.dueAt.toISOString()}` : 'waits for the next turn'
    })`,
    e,
  );
}

async function append(deps: PublishDeps, due: DueAppend): Promise<void> {
  // Under the lock, again: an unpublish or "live off" that came first wins, and nothing is brought back.
  const [still] = await deps.sql`select 1 from publications
    where conversation_id = ${due.conversationId} and live and status in ('published', 'failed')`;
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
    // Gone out: the next failure waits the shortest time again (a statement only after failures).
    if (due.failures)
      await deps.sql`update publications set live_failures = 0 where conversation_id = ${due.conversationId}`;
  } catch (e) {
    // A turn still being written: try again shortly. The path moved since it was read: whatever moved it made
    // the append due again. Anything else is a failure, tried again after a while (runAppend).
    if (e instanceof AppError && e.code === 'TURN_IN_PROGRESS')
      await deps.sql`update publications set live_due_at = now() + interval '2 seconds'
        where conversation_id = ${due.conversationId} and live and live_due_at is null`;
    else if (!(e instanceof AppError && e.code === 'CONVERSATION_CHANGED')) throw e;
  }
}

/** Appends one server runs at once (each for a different Player). */
export const LIVE_APPENDS_AT_ONCE = 8;

/**
 * Every server looks for due appends every second (each taken by one) and runs up to LIVE_APPENDS_AT_ONCE at
 * once, one per Player: an append waits on the Player's own PDS, so a slow or hostile PDS holds up only its
 * own Player's appends, never another's.
 */
export function startLiveAppends(deps: PublishDeps, retry: LiveRetry, everyMs = 1000): () => void {
  return startSweep({
    everyMs,
    atOnce: LIVE_APPENDS_AT_ONCE,
    take: (busy) => takeDue(deps, busy),
    run: (due) => runAppend(deps, due, retry),
    log: deps.log,
    what: 'live append',
  });
}
