import { setMaxListeners } from 'node:events';
import type { Queryable, Sql } from '../db/index.ts';
import { MESSAGE, SESSION } from '../lexicon/index.ts';
import { FairSlots, type Slot } from '../slots/index.ts';
import type { Network } from './network.ts';
import { type IndexInput, indexRecords, pruneTombstones, underAuthorLock } from './store.ts';
import { untilAborted } from './untilAborted.ts';

/**
 * How much reading one author's repo may cost (pages are per collection). A backfill is triggered by anonymous readers and runs against a
 * PDS anyone can run, so every dimension is bounded: pages, records, bytes and time per job; jobs at once on
 * the instance; how soon the same author is read again.
 */
export interface BackfillLimits {
  pages: number;
  records: number;
  bytes: number;
  timeMs: number;
  concurrency: number;
  waiting: number;
  cooldownMs: number;
  /** What backfills may keep in all, across authors (see evictBackfilled). */
  totalRecords: number;
  totalBytes: number;
}

export const BACKFILL_LIMITS: BackfillLimits = {
  pages: 10,
  records: 1000,
  bytes: 5 * 1024 * 1024,
  timeMs: 20_000,
  concurrency: 4,
  waiting: 100,
  cooldownMs: 10 * 60_000,
  totalRecords: 50_000,
  totalBytes: 128 * 1024 * 1024,
};

class BackfillBusy extends Error {}

/**
 * The backfills of one index (one database): one job per DID at a time, a few at once in all, shared fairly
 * between the readers who asked (keyed by address, see `requesterKey`): one reader naming a hundred slow repos
 * holds at most `concurrency − 1` places, and waits behind nobody else's turn; another reader finds the place kept
 * free (ADR 0106). Every wait and every hold is bounded.
 */
class Backfills {
  private jobs = new Map<string, { done: Promise<number>; join(reader: string): void }>();
  private readonly places: FairSlots;
  constructor(
    private readonly sql: Sql,
    private readonly limits: BackfillLimits,
  ) {
    this.places = new FairSlots({
      capacity: limits.concurrency,
      perPlayer: Math.max(1, limits.concurrency - 1),
      reserve: limits.concurrency > 1 ? 1 : 0,
      queuePerPlayer: PER_READER_WAITING,
      queueTotal: limits.waiting,
      queueFullStatus: 503,
      waitMs: WAIT_MS,
      // Past its own time limit, a job that has not let go (a write that hangs) gives its place up anyway.
      holdMs: limits.timeMs + 10_000,
      messages: { queueFull: 'busy', busy: 'busy' },
    });
  }

  /**
   * Starts the DID's backfill, or joins the one running. It belongs to no request: a reader leaving ends nothing.
   * While it waits for a place, each reader who asks for it asks under its own key, and it runs in the first place
   * granted: a reader cannot keep a DID others want waiting in its own long line.
   */
  start(network: Network, did: string, requester: string): Promise<number> {
    let job = this.jobs.get(did);
    if (!job) {
      const created = this.job(network, did);
      this.jobs.set(did, created);
      created.done.finally(() => this.jobs.delete(did)).catch(() => {});
      job = created;
    }
    job.join(requester);
    return job.done;
  }

  private job(network: Network, did: string): { done: Promise<number>; join(reader: string): void } {
    const readers = new Set<string>();
    const withdraw = new AbortController();
    const place = Promise.withResolvers<Slot>();
    let asking = false;
    let pending = 0;
    let decided = false;
    // Each reader asking listens on it: as many as ask, not a leak.
    setMaxListeners(0, withdraw.signal);
    const ask = (reader: string) => {
      pending++;
      // acquire throws at once on an aborted signal: told like any refusal.
      const asked = (async () => this.places.acquire(reader, { signal: withdraw.signal }))();
      asked.then(
        (slot) => {
          if (decided) return slot.release();
          decided = true;
          withdraw.abort();
          place.resolve(slot);
        },
        (e: unknown) => {
          if (--pending > 0 || decided) return;
          decided = true;
          place.reject(e);
        },
      );
    };
    const join = (reader: string) => {
      if (decided || readers.has(reader)) return;
      readers.add(reader);
      if (asking) ask(reader);
    };
    const done = (async () => {
      const [recent] = await this.sql`select 1 from index_actors where did = ${did}
        and backfilled_at > now() - make_interval(secs => ${this.limits.cooldownMs / 1000})`;
      if (recent) return 0;
      asking = true;
      for (const reader of readers) ask(reader);
      // Busy (each asker's line or every line full, or no place within the wait): not read, and not "read and
      // empty" either — the reader is told to ask again (INDEXING).
      const slot = await place.promise.catch(() => {
        throw new BackfillBusy();
      });
      try {
        return await readRepo(this.sql, network, did, this.limits, slot.signal);
      } finally {
        slot.release();
      }
    })();
    return { done, join };
  }
}

/** Of one reader's backfills, at most this many wait for a place; and each waits at most `WAIT_MS`. */
const PER_READER_WAITING = 8;
const WAIT_MS = 60_000;

/** Reads an author's click.aligned.chat.* records into the index, within the limits. Returns how many. */
async function readRepo(
  sql: Sql,
  network: Network,
  did: string,
  limits: BackfillLimits,
  place: AbortSignal,
): Promise<number> {
  const signal = AbortSignal.any([AbortSignal.timeout(limits.timeMs), place]);
  // The handle's DNS lookup has no time limit of its own: the job's signal bounds it, and an author not resolved
  // in time is one not resolved (its cool-down is kept all the same).
  const id = await untilAborted(network.identity(did), signal).catch(() => null);
  // Read from the database's clock: whatever the index takes after this (a delete, a newer version from the
  // stream) wins over what this read brings.
  const [row] = await sql<{ since: Date }[]>`select clock_timestamp() as since`;
  const since = row!.since;
  let records = 0;
  let bytes = 0;
  let page: IndexInput[] = [];
  let written = 0;
  const write = async () => {
    const batch = page;
    page = [];
    if (!batch.length) return;
    await underAuthorLock(sql, did, async (tx) => {
      // Checked under the lock a purge takes too: an account taken down meanwhile is not written back.
      if (await notActive(tx, did)) return;
      await indexRecords(tx, did, batch, { backfill: { since } });
      written += batch.length;
    });
  };
  try {
    // An account the network says is not active (taken down, deleted, deactivated…) is not read at all.
    if (id && !(await notActive(sql, did))) {
      outer: for (const collection of [SESSION, MESSAGE]) {
        if (records >= limits.records) break;
        for await (const r of network.listRecords(id.pds, did, collection, {
          maxPages: limits.pages,
          signal,
        })) {
          bytes += JSON.stringify(r.value).length;
          if (++records > limits.records || bytes > limits.bytes) break outer;
          page.push({
            collection,
            rkey: r.uri.split('/').pop()!,
            cid: r.cid,
            record: r.value,
            refused: r.refused,
          });
          if (page.length >= 100) await write();
        }
        await write();
      }
    }
  } finally {
    await write().catch(() => {});
    // Even a partial or failed read counts: the same author is not read again before the cool-down.
    // An author not resolved (in time) keeps the handle verified before: nothing new was learnt of it.
    const handle = id?.handle ?? null;
    const learnt = id !== null;
    await sql`insert into index_actors (did, handle, backfilled_at, verified_at)
      values (${did}, ${handle}, now(), ${handle ? new Date() : null})
      on conflict (did) do update set backfilled_at = now(),
        handle = case when ${learnt} then excluded.handle else index_actors.handle end,
        verified_at = case when ${learnt} then excluded.verified_at else index_actors.verified_at end`;
    if (written) await evictBackfilled(sql, limits);
    // Any reader can name any DID: the rows that only held a cool-down that has passed, for authors with
    // nothing indexed, are let go now and then, so asking about many DIDs does not grow the table for ever.
    if (Math.random() < PRUNE_CHANCE) {
      await pruneActors(sql, limits.cooldownMs);
      await pruneTombstones(sql);
    }
  }
  return records;
}

/**
 * The total a backfill may keep across authors: each fresh DID an anonymous reader names can bring its limit
 * of rows, so what only backfills vouch for is bounded as a whole, the authors read longest ago let go first.
 * Rows the network's stream has since delivered are no longer counted (they are the index proper).
 */
async function evictBackfilled(sql: Sql, limits: BackfillLimits): Promise<void> {
  const authors = await sql<{ did: string; n: number; bytes: number }[]>`
    select did, sum(n)::int as n, sum(bytes)::float8 as bytes, max(at) as at from (
      select did, count(*) as n, sum(octet_length(view)) as bytes, max(written_at) as at
        from index_messages where from_backfill group by did
      union all
      select did, count(*), sum(pg_column_size(record)), max(written_at)
        from index_sessions where from_backfill group by did) x
    group by did order by max(at) desc`;
  let n = 0;
  let bytes = 0;
  const evict: string[] = [];
  for (const a of authors) {
    n += a.n;
    bytes += a.bytes;
    if (n > limits.totalRecords || bytes > limits.totalBytes) evict.push(a.did);
  }
  if (!evict.length) return;
  await sql`delete from index_messages where from_backfill and did = any(${evict}::text[])`;
  await sql`delete from index_sessions where from_backfill and did = any(${evict}::text[])`;
  // Read again only after the cool-down, like any author.
}

const PRUNE_CHANCE = 0.02;

const notActive = async (sql: Queryable, did: string) =>
  (await sql`select 1 from index_actors where did = ${did} and status is not null`).length > 0;

/** Authors the index keeps nothing of, whose backfill cool-down is over. */
export async function pruneActors(sql: Sql, cooldownMs: number): Promise<number> {
  // An author with a status is kept: it is what stops a backfill of an account that is not active.
  const gone = await sql`delete from index_actors a
    where a.backfilled_at < now() - make_interval(secs => ${cooldownMs / 1000}) and a.status is null
      and not exists (select 1 from index_sessions s where s.did = a.did)
      and not exists (select 1 from index_messages m where m.did = a.did)`;
  return gone.count;
}

const registries = new WeakMap<Sql, Map<BackfillLimits, Backfills>>();

/** One pool per database and limits (the tests' own limits get their own). */
function registryOf(sql: Sql, limits: BackfillLimits): Backfills {
  const ofSql = registries.get(sql) ?? new Map<BackfillLimits, Backfills>();
  registries.set(sql, ofSql);
  const registry = ofSql.get(limits) ?? new Backfills(sql, limits);
  ofSql.set(limits, registry);
  return registry;
}

export interface BackfillOptions {
  /** Who asked (`requesterKey` of the reader's request): the pool is shared fairly between them. */
  requester?: string;
  /** How long the reader waits for the backfill; it goes on after. */
  waitMs?: number;
  limits?: BackfillLimits;
}

/** Starts (or joins) the backfill of `did` and waits for it at most `waitMs`; true when it has finished. */
export async function backfillActor(
  sql: Sql,
  network: Network,
  did: string,
  { requester = 'anonymous', waitMs = 5000, limits = BACKFILL_LIMITS }: BackfillOptions = {},
): Promise<boolean> {
  const job = registryOf(sql, limits).start(network, did, requester);
  let timer: NodeJS.Timeout | undefined;
  const finished = await Promise.race([
    job.then(
      () => true,
      (e) => !(e instanceof BackfillBusy),
    ),
    new Promise<false>((r) => {
      timer = setTimeout(() => r(false), waitMs);
    }),
  ]);
  clearTimeout(timer);
  return finished;
}
