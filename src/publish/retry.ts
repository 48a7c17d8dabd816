import { messageIds } from '../conversations/index.ts';
import { AppError } from '../http/index.ts';
import { retryLater } from './retryDue.ts';
import { extendsReviewed } from './review.ts';
import { type PublishDeps, resume } from './service.ts';
import { getPublication, getReviewedPath, withPublicationLock } from './store.ts';
import { startSweep } from './sweep.ts';

/**
 * Publications a run left part-way, tried again in the background (ADR 0091): a publish or cover the PDS failed
 * (out of reach, restarting, a sign-in being renewed) is finished, and an unpublish that stopped part-way takes
 * down what is still out, without the Player coming back. A live one too: its appends retry only their own
 * failures (ADR 0077), not a publish by hand's or a cover's, and both take the same lease.
 */

interface DueRetry {
  conversationId: string;
  playerId: string;
  did: string;
}

/** Retries one server runs at once (each for a different Player). */
export const RETRIES_AT_ONCE = 4;

/**
 * Takes one due retry, if any, of a Player not in `busy`: `skip locked` and moving the due time on make one server
 * take it; moved on by CLAIM, not cleared, so a server that dies holding it leaves it to be taken again.
 */
async function takeDue(deps: PublishDeps, busy: readonly string[]): Promise<DueRetry | undefined> {
  const [due] = await deps.sql<DueRetry[]>`
    update publications set retry_due_at = now() + ${CLAIM}::interval
    where conversation_id = (
      select conversation_id from publications
      where retry_due_at <= now() and status in ('failed', 'unpublishing')
        and player_id <> all(${busy}::uuid[])
      order by retry_due_at limit 1 for update skip locked)
    returning conversation_id as "conversationId", player_id as "playerId", did`;
  return due;
}

const CLAIM = '10 minutes';

async function runRetry(deps: PublishDeps, due: DueRetry): Promise<void> {
  try {
    await withPublicationLock(deps.leases, due.conversationId, async () => {
      if (await moved(deps, due.conversationId)) return;
      await resume(deps, due.did, due.conversationId);
    });
  } catch (e) {
    // A run that stopped part-way has counted itself and set its next try; anything before it (the sign-in out
    // of reach, the lock busy) is counted here.
    if (e instanceof AppError && e.code === 'PUBLISH_INCOMPLETE') return;
    await retryLater(deps, due.conversationId, e, 'could not be tried again');
  }
}

/**
 * A publish whose path has moved since it was reviewed (a reply regenerated, another branch shown) and that would
 * still put a record out for the first time is not finished in the background: its stored plan would send what the
 * Player has since replaced. It waits for the Player, as before ADR 0091. What only changes records already out
 * (a cover written at once, ADR 0090) goes on, and so does an unpublish: taking down is what was asked.
 */
async function moved(deps: PublishDeps, conversationId: string): Promise<boolean> {
  const [publication, path, reviewed, [creates]] = await Promise.all([
    getPublication(deps.sql, conversationId),
    messageIds(deps.sql, conversationId),
    getReviewedPath(deps.sql, conversationId),
    deps.sql<{ any: boolean }[]>`select exists (select 1 from publication_records
      where conversation_id = ${conversationId} and pending = 'create') as any`,
  ]);
  if (publication?.status !== 'failed' || !creates?.any || extendsReviewed(path, reviewed)) return false;
  await deps.sql`update publications set retry_due_at = null where conversation_id = ${conversationId}`;
  deps.log(`publication ${conversationId} waits for the Player: its path moved since it was reviewed`);
  return true;
}

/** Every server looks for due retries every few seconds and runs up to RETRIES_AT_ONCE at once, one per Player. */
export function startPublishRetries(deps: PublishDeps, everyMs = 5000): () => void {
  return startSweep({
    everyMs,
    atOnce: RETRIES_AT_ONCE,
    take: (busy) => takeDue(deps, busy),
    run: (due) => runRetry(deps, due),
    log: deps.log,
    what: 'publication retry',
  });
}
