import { LIVE_INSTANCES, type Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import type { Choices } from '../redaction/index.ts';
import { type PublishDeps, publish } from './service.ts';
import { getDraft, withPublicationLock } from './store.ts';

/**
 * Live publishing (ADR 0043): a published Conversation marked live has each new turn appended to its session
 * once the turn is complete and a delay has passed, in the background, by whichever server takes it first.
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
      409,
      'NOT_PUBLISHED',
      'Publish the Conversation first; then its new turns can follow live.',
    );
}

/**
 * A turn ended (told before its claim is released): if the Conversation is live, its append is due after the
 * delay, and the end is dated so no append takes the turn sooner (one statement, a no-op otherwise).
 */
export async function turnEnded(sql: Sql, conversationId: string): Promise<void> {
  await sql`update publications set live_due_at = now() + make_interval(secs => live_delay_seconds),
      live_turn_ended_at = now()
    where conversation_id = ${conversationId} and live`;
}

/**
 * Holds a turn back before it goes out: it will be published withheld (a visible hole) until the Player
 * releases it from the publish page. Only for turns not yet published.
 */
export async function holdBack(sql: Sql, playerId: string, conversationId: string, messageId: string) {
  // Any record of it, written or about to be: it is on its way out, or out (the caller holds the lock).
  const [row] = await sql<{ published: boolean; known: boolean }[]>`
    select exists (select 1 from publication_records where conversation_id = ${conversationId}
        and message_id = ${messageId}) as published,
      exists (select 1 from messages m join conversations c on c.id = m.conversation_id
        where m.id = ${messageId} and c.id = ${conversationId} and c.player_id = ${playerId}) as known`;
  if (!row?.known) throw new AppError(404, 'NOT_FOUND', 'There is no such Message in this Conversation.');
  if (row.published)
    throw new AppError(
      409,
      'ALREADY_PUBLISHED',
      'That turn has gone out already: withhold it from the publish page.',
    );
  const updated = await sql`update publication_drafts
    set choices = jsonb_set(choices, array[${messageId}::text],
      coalesce(choices -> ${messageId}::text, '{}'::jsonb) || '{"withheld": true}'::jsonb)
    where conversation_id = ${conversationId}`;
  if (updated.count === 0) throw new AppError(409, 'NOT_PUBLISHED', 'This Conversation is not published.');
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
  await withPublicationLock(deps.lockSql ?? deps.sql, due.conversationId, () => append(deps, due));
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
  // Only once the Conversation is quiet: no turn running (a Party's next reply may not have begun yet), and the
  // last turn's delay has passed — a retry must not catch a turn that has only just ended.
  const [quiet] = await deps.sql<{ busy: boolean; wait: Date | null }[]>`
    select c.turn_owner is not null and c.turn_owner in (${deps.sql.unsafe(LIVE_INSTANCES)}) as busy,
      case when p.live_turn_ended_at + make_interval(secs => p.live_delay_seconds) > now()
        then p.live_turn_ended_at + make_interval(secs => p.live_delay_seconds) end as wait
    from publications p join conversations c on c.id = p.conversation_id
    where p.conversation_id = ${due.conversationId}`;
  if (quiet?.busy || quiet?.wait) {
    const at = quiet.wait ?? new Date(Date.now() + 2000);
    await deps.sql`update publications set live_due_at = greatest(coalesce(live_due_at, ${at}), ${at})
      where conversation_id = ${due.conversationId} and live`;
    return;
  }
  try {
    const choices: Choices = {};
    if (due.withhold) {
      const [draft, fresh] = await Promise.all([
        getDraft(deps.sql, due.conversationId),
        deps.sql<{ id: string }[]>`select m.id from messages m where m.conversation_id = ${due.conversationId}
          and m.on_path and not exists (select 1 from publication_records r
            where r.conversation_id = m.conversation_id and r.message_id = m.id)`,
      ]);
      for (const { id } of fresh) if (!draft?.choices[id]) choices[id] = { withheld: true };
    }
    await publish(deps, { id: due.playerId, did: due.did }, due.conversationId, { choices });
  } catch (e) {
    // A turn still being written: try again shortly. Anything else waits for the next turn, and is said.
    if (e instanceof AppError && e.code === 'TURN_IN_PROGRESS')
      await deps.sql`update publications set live_due_at = now() + interval '2 seconds'
        where conversation_id = ${due.conversationId} and live and live_due_at is null`;
    else deps.log(`live publishing of ${due.conversationId} could not append`, e);
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
