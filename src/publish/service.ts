import { Agent } from '@atproto/api';
import type { NodeOAuthClient } from '@atproto/oauth-client-node';
import { indexedUris, indexRecords, removeRecords, underAuthorLock } from '../appview/index.ts';
import { restoreSession } from '../auth/index.ts';
import type { Leases, Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { MESSAGE, SESSION } from '../lexicon/index.ts';
import { publishOutcome } from '../metrics/index.ts';
import type { Preview } from '../redaction/index.ts';
import { POINTS_PER_HOUR, pointsFor } from './batches.ts';
import { coverDespite } from './coverWrite.ts';
import { executePending, PublishPausedError } from './execute.ts';
import { loadForPlan } from './load.ts';
import { choose, lookupsOf, type Planned, type PublishInput, plan } from './plan.ts';
import { webDidShows } from './projection.ts';
import { agentRepo, type Repo, type RepoWrite, type Written } from './repo.ts';
import { networkResolver, resolveAll } from './resolve.ts';
import { retryLater } from './retryDue.ts';
import {
  dropPublication,
  getPublication,
  getPublishedRecords,
  markAllForDeletion,
  type PublishedRecord,
  savePlan,
  setStatus,
} from './store.ts';

// Publishing's I/O: what a plan loads and looks up, storing it, writing it to the Player's PDS (and through to
// the AppView), and unpublishing. The planning itself is plan.ts's, pure.

export interface PublishDeps {
  sql: Sql;
  /** Publication leases (see withPublicationLock). */
  leases: Leases;
  oauth: NodeOAuthClient;
  plcUrl: string;
  localNetwork: boolean;
  /** The outbound fetch for resolving refs and mentions (see outbound/). */
  fetch: typeof globalThis.fetch;
  log: (message: string, error?: unknown) => void;
  /** The first wait before a run left part-way is tried again in the background (ADR 0091). */
  retryMs: number;
}

/** The Player's repo through their OAuth session: the only way the server writes to a PDS. */
async function repoFor(deps: PublishDeps, did: string): Promise<{ repo: Repo; agent: Agent }> {
  const agent = new Agent(await restoreSession(deps.oauth, did, 'publish'));
  return { repo: agentRepo(agent, did), agent };
}

/**
 * Loads what the plan needs, looks up the links it asks for, and plans (plan.ts): every record the Conversation
 * should have on the PDS and the write each needs.
 */
async function planFor(
  deps: PublishDeps,
  did: string,
  agent: Agent,
  conversationId: string,
  playerId: string,
  input: PublishInput,
  lookups: 'all' | ReadonlySet<string>,
): Promise<Planned> {
  const loaded = await loadForPlan(deps.sql, { id: playerId, did }, conversationId);
  const chosen = choose(loaded.turns, input, loaded.draft);
  const wanted = lookupsOf(loaded.turns, chosen, lookups);
  const resolution = await resolveAll(
    networkResolver(agent, deps.plcUrl, deps.localNetwork, deps.fetch),
    wanted.pointers,
    wanted.accounts,
    // A name may resolve to a did:web that spells a covered word: refused as it is, its host asked nothing more.
    (did) => webDidShows(did, chosen.published.cover),
  );
  return plan(loaded, input, chosen, resolution);
}

function toPreview(p: Planned): Preview {
  const writes = p.records.filter((r) => r.pending).map((r) => ({ action: r.pending! }));
  return {
    uri: `at://${p.did}/${SESSION}/${p.sessionRkey}`,
    title: p.title,
    defaultTitle: p.defaultTitle,
    chosenTitle: p.draft.title,
    records: p.records.map((r) => ({
      rkey: r.rkey,
      collection: r.collection,
      messageId: r.messageId,
      record: r.record,
      write: r.pending,
    })),
    problems: p.problems,
    unchecked: p.unchecked,
    agents: p.agents,
    points: pointsFor(writes),
  };
}

export async function previewPublication(
  deps: PublishDeps,
  player: { id: string; did: string },
  conversationId: string,
  input: PublishInput,
) {
  const { agent } = await repoFor(deps, player.did);
  const checked = new Set(input.check ?? []);
  return toPreview(await planFor(deps, player.did, agent, conversationId, player.id, input, checked));
}

/** Publishes, appends or edits: plans, refuses on any problem, stores the plan, then writes it. */
export async function publish(
  deps: PublishDeps,
  player: { id: string; did: string },
  conversationId: string,
  input: PublishInput,
) {
  const { repo, agent } = await repoFor(deps, player.did);
  // Refused, the words the request covers still leave what is already out (ADR 0090).
  return publishPlanned(deps, repo, agent, player, conversationId, input).catch(async (e: unknown) => {
    throw await coverDespite(deps.sql, player, conversationId, input, e, () =>
      run(deps, repo, conversationId),
    );
  });
}

async function publishPlanned(
  deps: PublishDeps,
  repo: Repo,
  agent: Agent,
  player: { id: string; did: string },
  conversationId: string,
  input: PublishInput,
) {
  const planned = await planFor(deps, player.did, agent, conversationId, player.id, input, 'all');
  const preview = toPreview(planned);
  // Every published turn's links were looked up above; one left unchecked would be published without them.
  if (planned.unchecked.length) throw new Error('publish left links unchecked');
  if (planned.problems.length) {
    throw new AppError(
      'PUBLISH_PROBLEMS',
      `${planned.problems.length === 1 ? 'One thing must' : `${planned.problems.length} things must`} be fixed before publishing: they are listed below, each with its turn.`,
      { details: { problems: planned.problems } },
    );
  }
  if (preview.points > POINTS_PER_HOUR) {
    throw new AppError(
      'RATE_LIMIT_BUDGET',
      `Publishing this needs about ${preview.points} of your PDS's ${POINTS_PER_HOUR} write points per hour. Withhold or publish part of it now and the rest later.`,
    );
  }
  await savePlan(deps.sql, {
    publication: {
      conversationId,
      playerId: player.id,
      did: player.did,
      sessionRkey: planned.sessionRkey,
      title: planned.title,
    },
    records: planned.records,
    draft: planned.draft,
  });
  const calls = await run(deps, repo, conversationId);
  // The answer is the new state: every record as it now stands on the PDS, nothing left to write.
  const records = preview.records.filter((r) => r.write !== 'delete').map((r) => ({ ...r, write: null }));
  return { ...preview, records, points: 0, calls };
}

/** Writes what the stored plan still needs; used after a pause or a crash. */
export async function resume(deps: PublishDeps, did: string, conversationId: string): Promise<number> {
  const { repo } = await repoFor(deps, did);
  return run(deps, repo, conversationId);
}

async function run(deps: PublishDeps, repo: Repo, conversationId: string): Promise<number> {
  const publication = await getPublication(deps.sql, conversationId);
  // On the database's clock, as the index's deletes are: one made after this is not superseded by a write of
  // this run whose rev is unknown.
  const [clock] = await deps.sql<{ startedAt: Date }[]>`select now() as "startedAt"`;
  const startedAt = clock!.startedAt;
  // Each batch the PDS has taken goes into our index while the next one is written (the write-through's time
  // overlaps the PDS's), so the end only removes what is gone and indexes what no batch of this run wrote. A
  // publish that stops part-way leaves what it created or updated readable, as the event stream would.
  const indexed = new Set<string>();
  // Every record this run created or updated, its answer lost or not: only these are "just written".
  const wrote = new Set<string>();
  let indexing = Promise.resolve();
  const onWritten = (batch: RepoWrite[], written: Written) => {
    for (const w of batch) if (w.action !== 'delete') wrote.add(recordUri(repo.did, w));
    if (!written.rev || publication?.status === 'unpublishing') return;
    const records = batch.flatMap((w, i) =>
      w.action === 'delete' || !written.cids[i]
        ? []
        : [
            {
              collection: w.collection,
              rkey: w.rkey,
              cid: written.cids[i]!,
              record: w.value,
              rev: written.rev!,
            },
          ],
    );
    if (!records.length) return;
    indexing = indexing
      .then(() =>
        underAuthorLock(deps.sql, repo.did, (tx) => indexRecords(tx, repo.did, records, { written: true })),
      )
      .then(() => {
        for (const r of records) indexed.add(recordUri(repo.did, r));
      })
      .catch((e) => deps.log('index write-through failed', e));
  };
  try {
    let { calls, rev } = await executePending(deps.sql, repo, conversationId, { onWritten }).finally(
      () => indexing,
    );
    const sessionUri = `at://${repo.did}/${SESSION}/${publication?.sessionRkey}`;
    if (publication?.status === 'unpublishing') {
      rev = (await verifyGone(repo, sessionUri)) ?? rev;
      await dropPublication(deps.sql, conversationId);
    } else await setStatus(deps.sql, conversationId, 'published', null);
    publishOutcome(publication?.status === 'unpublishing' ? 'unpublished' : 'published');
    // Write-through to our own AppView index, so the Player's link works at once (the event stream brings
    // the same records a moment later; indexing is idempotent, and by rev, so an older event arriving after
    // this cannot undo it).
    await syncIndex(
      deps.sql,
      repo.did,
      sessionUri,
      await getPublishedRecords(deps.sql, conversationId),
      rev,
      { indexed, wrote, startedAt },
    ).catch((e) => deps.log('index write-through failed', e));
    return calls;
  } catch (e) {
    const message =
      e instanceof PublishPausedError
        ? e.message
        : `Publishing stopped part-way: ${(e as Error).message}. What reached your PDS stays there; the next try goes on from it.`;
    publishOutcome(e instanceof PublishPausedError ? 'paused' : 'failed');
    await setStatus(
      deps.sql,
      conversationId,
      publication?.status === 'unpublishing' ? 'unpublishing' : 'failed',
      message,
    );
    await retryLater(deps, conversationId, e, 'stopped part-way');
    throw new AppError('PUBLISH_INCOMPLETE', message, {
      status: e instanceof PublishPausedError ? 429 : 502,
      cause: e,
    });
  }
}

/** Deletes every record of the publication, then lists the repo to make sure none is left. */
export async function unpublish(
  deps: PublishDeps,
  player: { id: string; did: string },
  conversationId: string,
) {
  const publication = await getPublication(deps.sql, conversationId);
  if (!publication)
    throw new AppError('NOT_PUBLISHED', 'This Conversation is not published.', { status: 404 });
  const { repo } = await repoFor(deps, player.did);
  await markAllForDeletion(deps.sql, conversationId);
  await run(deps, repo, conversationId);
}

/** Deletes whatever of the session is still on the PDS; the deleting commit's rev, if it deleted any. */
async function verifyGone(repo: Repo, sessionUri: string): Promise<string | null> {
  const leftovers: { collection: string; rkey: string }[] = [];
  for await (const r of repo.listRecords(MESSAGE)) {
    if ((r.value as { session?: string }).session === sessionUri)
      leftovers.push({ collection: MESSAGE, rkey: r.uri.split('/').pop()! });
  }
  const sessionRkey = sessionUri.split('/').pop()!;
  if (await repo.getRecordCid(SESSION, sessionRkey))
    leftovers.push({ collection: SESSION, rkey: sessionRkey });
  if (!leftovers.length) return null;
  return (await repo.applyWrites(leftovers.map((l) => ({ action: 'delete', ...l })))).rev;
}

/** A record's at-uri: the one key the batches' indexing and the end's agree on. */
const recordUri = (did: string, r: { collection: string; rkey: string }) =>
  `at://${did}/${r.collection}/${r.rkey}`;

/**
 * The index made to hold what the PDS holds. Each record carries the rev of the commit that wrote it and each
 * delete the run's last rev (no earlier than the deleting commit's), so the stream's events of older versions,
 * which may arrive after this, are refused; a rev the PDS never gave leaves the record newest whatever comes.
 */
async function syncIndex(
  sql: Sql,
  did: string,
  sessionUri: string,
  records: PublishedRecord[],
  lastRev: string | null,
  run: {
    /** Already indexed by this run, batch by batch, at the revs that wrote them. */
    indexed: Set<string>;
    /** Created or updated by this run. */
    wrote: Set<string>;
    startedAt: Date;
  },
) {
  const live = records.filter((r) => r.cid && r.pending === null);
  const keep = new Set(live.map((r) => recordUri(did, r)));
  const rest = live.filter((r) => !run.indexed.has(recordUri(did, r)));
  const input = (r: PublishedRecord) => ({
    collection: r.collection,
    rkey: r.rkey,
    cid: r.cid!,
    record: r.record,
    ...(r.rev ? { rev: r.rev } : {}),
  });
  // Written by this run with its answer lost: the version just written, which supersedes any delete made
  // before the run began.
  const justWritten = rest.filter((r) => run.wrote.has(recordUri(did, r))).map(input);
  const earlier = rest.filter((r) => !run.wrote.has(recordUri(did, r)));
  // Under the author's lock: the stream's batch of an older version cannot check tombstones before these
  // removals and write after them (see `underAuthorsShared`).
  await underAuthorLock(sql, did, async (tx) => {
    const present = await indexedUris(tx, sessionUri);
    const gone = present.filter((uri) => !keep.has(uri));
    await removeRecords(
      tx,
      gone.map((uri) => ({ uri, rev: lastRev })),
    );
    if (justWritten.length)
      await indexRecords(tx, did, justWritten, { written: true, writtenSince: run.startedAt });
    // Earlier publishes' records only where the index lacks them (its write-through failed, say), and as the
    // stream's are: a delete made since with another client holds them back, whatever the rev the store knows
    // for them, and one the index holds stays as the stream left it (the store's copy may be older). Each run
    // of a live Conversation re-indexed every turn before: O(turns) per append.
    const indexedNow = new Set(present);
    const missing = earlier.filter((r) => !indexedNow.has(recordUri(did, r))).map(input);
    if (missing.length) await indexRecords(tx, did, missing);
  });
}
