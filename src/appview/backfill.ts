import type { Queryable, Sql } from '../db/index.ts';
import { MESSAGE, SESSION } from '../lexicon/index.ts';
import type { Network } from './network.ts';
import { type IndexInput, indexRecords, pruneTombstones, underAuthorLock } from './store.ts';

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

/** The backfills of one index (one database): one job per DID at a time, a few at once in all. */
class Backfills {
  private jobs = new Map<string, Promise<number>>();
  private active = 0;
  private queue: (() => void)[] = [];
  constructor(
    private readonly sql: Sql,
    private readonly limits: BackfillLimits,
  ) {}

  /** Starts the DID's backfill, or joins the one running. It belongs to no request: a reader leaving ends nothing. */
  start(network: Network, did: string, limits = this.limits): Promise<number> {
    const running = this.jobs.get(did);
    if (running) return running;
    const job = this.run(network, did, limits).finally(() => this.jobs.delete(did));
    job.catch(() => {});
    this.jobs.set(did, job);
    return job;
  }

  private async run(network: Network, did: string, limits: BackfillLimits): Promise<number> {
    const [recent] = await this.sql`select 1 from index_actors where did = ${did}
      and backfilled_at > now() - make_interval(secs => ${limits.cooldownMs / 1000})`;
    if (recent) return 0;
    if (this.active >= this.limits.concurrency) {
      // Busy: not read, and not "read and empty" either — the reader is told to ask again (INDEXING).
      if (this.queue.length >= this.limits.waiting) throw new BackfillBusy();
      await new Promise<void>((r) => this.queue.push(r));
    }
    this.active++;
    try {
      return await readRepo(this.sql, network, did, limits);
    } finally {
      this.active--;
      this.queue.shift()?.();
    }
  }
}

/** Reads an author's click.aligned.chat.* records into the index, within the limits. Returns how many. */
async function readRepo(sql: Sql, network: Network, did: string, limits: BackfillLimits): Promise<number> {
  const signal = AbortSignal.timeout(limits.timeMs);
  const id = await network.identity(did);
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
          page.push({ collection, rkey: r.uri.split('/').pop()!, cid: r.cid, record: r.value });
          if (page.length >= 100) await write();
        }
        await write();
      }
    }
  } finally {
    await write().catch(() => {});
    // Even a partial or failed read counts: the same author is not read again before the cool-down.
    const handle = id?.handle ?? null;
    await sql`insert into index_actors (did, handle, backfilled_at, verified_at)
      values (${did}, ${handle}, now(), ${handle ? new Date() : null})
      on conflict (did) do update set handle = excluded.handle, backfilled_at = now(), verified_at = excluded.verified_at`;
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

const registries = new WeakMap<Sql, Backfills>();

/** Starts (or joins) the backfill of `did` and waits for it at most `waitMs`; true when it has finished. */
export async function backfillActor(
  sql: Sql,
  network: Network,
  did: string,
  waitMs = 5000,
  limits = BACKFILL_LIMITS,
): Promise<boolean> {
  let registry = registries.get(sql);
  if (!registry) {
    registry = new Backfills(sql, limits);
    registries.set(sql, registry);
  }
  const job = registry.start(network, did, limits);
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
