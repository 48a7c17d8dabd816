import type { Sql } from '../db/index.ts';
import type { Op } from './ops.ts';
import {
  type IngestSource,
  indexRecords,
  purgeActor,
  removeRecords,
  saveCursor,
  setHandle,
  setStatus,
  underAuthorLock,
  underAuthorsShared,
} from './store.ts';

export interface BatcherEvents {
  /** A batch could not be stored (the database is away or refused it); it is retried or split. */
  onError: (e: unknown) => void;
  /** One record was refused for what it holds, skipped and counted: `uri` names it. */
  onSkip: (uri: string, reason: string) => void;
}

/**
 * Buffers events and applies them in order, consecutive upserts as one bulk statement, every 50 ms or 500
 * events. The cursor saved is the last event written, so a restart replays only what was not yet in the
 * index (every op is idempotent, so replaying is harmless). One record can never stop the index: a batch that
 * fails for anything but the database being away is written op by op, and an op that fails alone is skipped.
 */
export class Batcher {
  private ops: Op[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Ops handed to writes not yet done. */
  private queued = 0;

  constructor(
    private readonly sql: Sql,
    private readonly source: IngestSource,
    private readonly events: BatcherEvents,
    /** The Jetstream instance's host, whose event numbers the ops carry. */
    private readonly host?: string,
  ) {}

  async add(op: Op): Promise<void> {
    this.ops.push(op);
    // Waiting here holds the event stream back while batches cannot be written, so nothing piles up: a full
    // batch waits for the writes before it, and so does any op while many are queued behind a slow database.
    // Not for its own write: the stream is decoded into the next batch while this one is written.
    if (this.ops.length >= 500 || this.queued >= 5000) {
      const before = this.writing;
      void this.flush();
      await before;
    } else this.timer ??= setTimeout(() => void this.flush(), 50);
  }

  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const ops = this.ops;
    this.ops = [];
    this.queued += ops.length;
    this.writing = this.writing.then(async () => {
      if (ops.length) await this.write(ops);
      this.queued -= ops.length;
    });
    return this.writing;
  }

  /**
   * Writes a batch. While the database is away the same batch is retried (backing off) until it is stored: the
   * cursor is saved with the batch, so it never moves past an event that is not in the index. Any other failure
   * — a refused value, or an exception of our own on a record nobody foresaw — splits the batch. Stopping gives
   * up the batch without saving its cursor; the next start replays it.
   */
  private async write(ops: Op[]): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        await apply(this.sql, this.source, ops, this.events.onSkip, this.host);
        return;
      } catch (e) {
        this.events.onError(e);
        if (!databaseAway(e)) return this.oneByOne(ops);
        await backOff(attempt);
      }
    }
  }

  private async oneByOne(ops: Op[]): Promise<void> {
    for (const op of ops) {
      for (let attempt = 0; !this.stopped; attempt++) {
        try {
          await apply(this.sql, this.source, [op], this.events.onSkip, this.host);
          break;
        } catch (e) {
          if (databaseAway(e)) {
            this.events.onError(e);
            await backOff(attempt);
            continue;
          }
          // This op alone fails, and would for ever: decided, skipped, counted, and the cursor moves past it.
          this.events.onSkip(describe(op), e instanceof Error ? `${e.name}: ${e.message}` : String(e));
          await this.sql`update index_state set skipped = skipped + 1 where id`.catch(() => {});
          await saveCursor(this.sql, op.at, this.source, seqOf([op], this.host)).catch(() => {});
          break;
        }
      }
    }
  }

  /** One last try to store what has arrived, then give up: an unstored batch is replayed next time. */
  async close(): Promise<void> {
    const last = this.flush();
    const timer = setTimeout(() => this.stop(), 2000);
    await last;
    clearTimeout(timer);
    this.stop();
  }

  stop() {
    this.stopped = true;
  }
}

const backOff = (attempt: number) => new Promise((r) => setTimeout(r, Math.min(100 * 2 ** attempt, 5000)));

function describe(op: Op): string {
  if (op.kind === 'upsert') return `at://${op.did}/${op.collection}/${op.rkey}`;
  if (op.kind === 'delete') return op.uri;
  return 'did' in op ? `${op.kind} of ${op.did}` : op.kind;
}

async function apply(
  sql: Sql,
  source: IngestSource,
  ops: Op[],
  onSkip: BatcherEvents['onSkip'],
  host?: string,
): Promise<void> {
  // Consecutive upserts are one statement, and consecutive deletes one transaction per author: one at a time, a
  // commit of 200 deletes (an unpublished thread) was 200 transactions, each waiting for its own flush to disk.
  let upserts: Extract<Op, { kind: 'upsert' }>[] = [];
  let deletes: Extract<Op, { kind: 'delete' }>[] = [];
  const flushUpserts = async () => {
    const batch = upserts;
    if (batch.length)
      await underAuthorsShared(sql, [...new Set(batch.map((u) => u.did))], (tx) =>
        indexRecords(tx, null, batch, { onSkip }),
      );
    upserts = [];
  };
  const flushDeletes = async () => {
    const byAuthor = Map.groupBy(deletes, (d) => /^at:\/\/([^/]+)\//.exec(d.uri)?.[1] ?? '');
    deletes = [];
    // Under the author's lock: a backfill of the same author cannot write a stale copy beside it.
    for (const [did, removals] of byAuthor)
      await underAuthorLock(sql, did, (tx) => removeRecords(tx, removals));
  };
  for (const op of ops) {
    // An event we do not index (another collection in the same commit) only moves the cursor: it breaks no run.
    if (op.kind === 'skip') continue;
    if (op.kind === 'upsert') {
      await flushDeletes();
      upserts.push(op);
      continue;
    }
    await flushUpserts();
    if (op.kind === 'delete') {
      deletes.push(op);
      continue;
    }
    await flushDeletes();
    if (op.kind === 'purge') await underAuthorLock(sql, op.did, (tx) => purgeActor(tx, op.did, op.status));
    else if (op.kind === 'status') await setStatus(sql, op.did, op.status);
    else if (op.kind === 'handle') await setHandle(sql, op.did, op.handle);
  }
  await flushDeletes();
  await flushUpserts();
  await saveCursor(sql, Math.max(...ops.map((o) => o.at)), source, seqOf(ops, host));
}

function seqOf(ops: Op[], host: string | undefined) {
  const seqs = ops.flatMap((o) => (o.seq === undefined ? [] : [o.seq]));
  return host && seqs.length ? { seq: Math.max(...seqs), host } : undefined;
}

/**
 * The database cannot store anything right now — the connection is gone, the server is shutting down or out of
 * room, a lock or serialisation conflict — so the same write will succeed later and must be retried, never
 * skipped. Anything else is about what is being written.
 */
export function databaseAway(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  // postgres.js's own connection errors, and Node's socket errors.
  if (/^(CONNECTION_|CONNECT_TIMEOUT|E(CONN|PIPE|TIMEDOUT|HOSTUNREACH|NETUNREACH|AI_AGAIN))/.test(code))
    return true;
  // SQLSTATE classes 08 (connection), 53 (insufficient resources), 57 (operator intervention), 58 (system
  // error); serialisation failure, deadlock, lock not available.
  return /^(08|53|57|58)/.test(code) || code === '40001' || code === '40P01' || code === '55P03';
}
