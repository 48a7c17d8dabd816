import { XRPCError } from '@atproto/api';
import type { Sql } from '../db/index.ts';
import { metrics } from '../metrics/index.ts';
import { uploadAvatars } from './avatars.ts';
import { batches } from './batches.ts';
import type { Repo, RepoWrite, Written } from './repo.ts';
import { markWritten, pendingWrites } from './store.ts';

export class PublishPausedError extends Error {
  constructor(
    message: string,
    readonly retryAt: Date | null,
  ) {
    super(message);
  }
}

export interface ExecuteOptions {
  /** Longest wait for a rate limit inside one call; longer, and the publish pauses with a time to resume. */
  maxWaitMs?: number;
  attempts?: number;
  sleep?: (ms: number) => Promise<void>;
  /**
   * Told of each batch once the PDS has taken it and the store says so; of one whose answer was lost (found
   * landed after), with `rev` null, as its revs are unknown. Not awaited: what it starts runs beside the next
   * batch's write.
   */
  onWritten?: (batch: RepoWrite[], written: Written) => void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Writes every pending record of a publication, in reading order, in as few applyWrites calls as the PDS
 * limits allow. Each batch is atomic on the PDS, which is what makes a retry safe: after a failure whose
 * outcome is unknown (a dropped socket, a 5xx), one look at the batch's first record says whether the whole
 * batch landed. Returns the number of write calls made and the rev of the last commit that wrote (null when the
 * PDS never said: the write-through index then takes its records as newest, as before revs were kept).
 */
export async function executePending(
  sql: Sql,
  repo: Repo,
  conversationId: string,
  o: ExecuteOptions = {},
): Promise<{ calls: number; rev: string | null }> {
  const wait = o.sleep ?? sleep;
  const attempts = o.attempts ?? 5;
  const writes = await pendingWrites(sql, conversationId);
  const plan = batches(writes);
  let calls = 0;
  let rev: string | null = null;
  for (const batch of plan) {
    let told: Written | undefined;
    // Failures of unknown outcome and rate limits are counted apart: one kind does not use up the other's tries.
    let limited = 0;
    for (let attempt = 1; ; ) {
      try {
        calls++;
        // The blobs the batch's records reference first: a PDS refuses a record whose blob it does not hold.
        await uploadAvatars(sql, repo, batch);
        const written = await repo.applyWrites(batch);
        metrics.applyWrites.inc({ outcome: 'ok' });
        await markWritten(sql, conversationId, batch, written);
        rev = written.rev ?? rev;
        told = written;
        break;
      } catch (e) {
        metrics.applyWrites.inc({ outcome: 'error' });
        const failure = writeFailure(e);
        if (failure === 'rate-limited') {
          const resetAt = rateLimitReset(e);
          // At least a second between tries, and not for ever: a PDS that keeps saying "now" is asked again later.
          const ms = Math.max(resetAt ? resetAt.getTime() - Date.now() : 1000, 1000);
          if (ms > (o.maxWaitMs ?? 30_000) || ++limited >= RATE_LIMITED_TRIES) {
            throw new PublishPausedError(
              `Your PDS's rate limit is reached; publishing resumes at ${resetAt?.toISOString() ?? 'a later time'}.`,
              resetAt,
            );
          }
          await wait(ms);
          continue;
        }
        if (failure === 'refused') throw e;
        // Looked for on the last attempt too: a batch that landed there and was left pending would be written
        // again at the next try, and a create the PDS already holds is refused, for good.
        if (await landed(repo, batch).catch(() => false)) {
          // The commit's rev was in the answer that was lost: these records' revs stay unknown.
          told = { cids: await currentCids(repo, batch), rev: null };
          await markWritten(sql, conversationId, batch, told);
          break;
        }
        if (attempt >= attempts) throw e;
        await wait(Math.min(250 * 2 ** attempt, 5000));
        attempt++;
      }
    }
    // Outside the write's try: nothing it does can be taken for a write of unknown outcome.
    if (told) o.onWritten?.(batch, told);
  }
  return { calls, rev };
}

/** Whether an atomic batch whose answer was lost did land: its first write says for all of them. */
async function landed(repo: Repo, batch: RepoWrite[]): Promise<boolean> {
  const first = batch[0]!;
  const cid = await repo.getRecordCid(first.collection, first.rkey);
  if (first.action === 'create') return cid !== null;
  if (first.action === 'delete') return cid === null;
  // An update cannot be told apart by presence; updates are idempotent, so retrying is safe.
  return false;
}

async function currentCids(repo: Repo, batch: RepoWrite[]): Promise<(string | null)[]> {
  return Promise.all(
    batch.map((w) => (w.action === 'delete' ? null : repo.getRecordCid(w.collection, w.rkey))),
  );
}

/**
 * What a failed write says. Every failure of an Agent call is an XRPCError: the PDS refused it (4xx: it did not
 * land), asked us to slow down (429), or its outcome is unknown — a 5xx, or no readable answer (a dropped
 * socket is status 1, `Unknown`; an answer that fails the lexicon, 2, came after the write). Anything else
 * never reached the PDS's answer either, so it is unknown too.
 */
export function writeFailure(e: unknown): 'rate-limited' | 'refused' | 'unknown' {
  if (!(e instanceof XRPCError)) return 'unknown';
  if (e.status === 429) return 'rate-limited';
  return e.status >= 400 && e.status < 500 ? 'refused' : 'unknown';
}

/** Tries of one batch a rate limit may take (each at least a second apart) before the publish pauses. */
const RATE_LIMITED_TRIES = 20;

/** When the PDS says its rate limit resets: only a time within the next day (anything else is not read). */
function rateLimitReset(e: unknown): Date | null {
  const headers = (e instanceof XRPCError ? e.headers : undefined) ?? {};
  const reset = Number(headers['ratelimit-reset'] ?? headers['RateLimit-Reset']) * 1000;
  const now = Date.now();
  return Number.isFinite(reset) && reset > now && reset < now + 86_400_000 ? new Date(reset) : null;
}
