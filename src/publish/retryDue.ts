import type { Sql } from '../db/index.ts';
import { PublishPausedError, writeFailure } from './execute.ts';

/**
 * When a publication a run left part-way is tried again in the background (ADR 0091): after the first wait, doubled
 * for each failure in a row, at most an hour; after RETRY_MAX_FAILURES in a row (about four hours of waits), not
 * again until the Player acts. A write the PDS refused is not tried again by itself either: the same write would be
 * refused again, so the Player is shown why.
 */
export const RETRY_MAX_FAILURES = 12;
const RETRY_MAX_MS = 3_600_000;

/** Counts a failure of the publication's run and sets when it is tried again, if it is; returns that time. */
export async function scheduleRetry(
  sql: Sql,
  conversationId: string,
  e: unknown,
  retryMs: number,
): Promise<{ failures: number; dueAt: Date | null } | undefined> {
  const refused = writeFailure(e) === 'refused';
  // A PDS that said when it takes writes again (its rate limit) is not asked sooner.
  const notBefore = (e instanceof PublishPausedError && e.retryAt) || new Date(0);
  const [row] = await sql<{ failures: number; dueAt: Date | null }[]>`
    update publications set retry_failures = retry_failures + 1,
      retry_due_at = case when ${refused} or retry_failures + 1 >= ${RETRY_MAX_FAILURES} then null
        else greatest(${notBefore}::timestamptz, now() + make_interval(secs =>
          least(${retryMs}::float8 * 2 ^ retry_failures, ${RETRY_MAX_MS}) / 1000)) end
    where conversation_id = ${conversationId} and status in ('failed', 'unpublishing')
    returning retry_failures as failures, retry_due_at as "dueAt"`;
  return row;
}

/** Counts the failure and sets the next try, as scheduleRetry, and logs both: `what` happened to the publication. */
export async function retryLater(
  deps: { sql: Sql; retryMs: number; log: (message: string, error?: unknown) => void },
  conversationId: string,
  e: unknown,
  what: string,
): Promise<void> {
  const next = await scheduleRetry(deps.sql, conversationId, e, deps.retryMs);
  deps.log(
    `publication ${conversationId} ${what} (failure ${next?.failures ?? '?'} in a row; ${
      next?.dueAt ? `tried again at ${next.dueAt.toISOString()}` : 'waits for the Player'
    })`,
    e,
  );
}
