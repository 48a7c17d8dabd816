import type { Sql } from '../db/index.ts';
import { type IngestSource, indexRecords, purgeActor, removeRecord, saveCursor, setHandle } from './store.ts';

/**
 * One event of either source, reduced to what the index does with it. `at` is the event's position in its
 * stream: a relay's sequence number, or Jetstream's time in microseconds.
 */
export type Op =
  | {
      kind: 'upsert';
      at: number;
      did: string;
      collection: string;
      rkey: string;
      cid: string;
      record: unknown;
    }
  | { kind: 'delete'; at: number; uri: string }
  | { kind: 'purge'; at: number; did: string }
  | { kind: 'handle'; at: number; did: string; handle: string | null }
  | { kind: 'skip'; at: number };

/**
 * Buffers events and applies them in order, consecutive upserts as one bulk statement, every 50 ms or 500
 * events. The cursor saved is the last event written, so a restart replays only what was not yet in the
 * index (every op is idempotent, so replaying is harmless).
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
    private readonly onError: (e: unknown) => void,
  ) {}

  async add(op: Op): Promise<void> {
    this.ops.push(op);
    // Waiting here holds the event stream back while batches cannot be written, so nothing piles up: a full
    // batch waits for the writes before it, and so does any op while many are queued behind a slow database.
    if (this.ops.length >= 500 || this.queued >= 5000) await this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), 50);
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
   * Writes a batch, and on a storage failure writes the same batch again (backing off) until it is stored:
   * the cursor is saved with the batch, so it never moves past an event that is not in the index. Stopping
   * gives up the batch without saving its cursor; the next start replays it.
   */
  private async write(ops: Op[]): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        await apply(this.sql, this.source, ops);
        return;
      } catch (e) {
        this.onError(e);
        // Refused for what it holds (a data or constraint error), not for the database being away: the same
        // batch would fail for ever. Each op alone instead; the one refused is skipped and counted.
        if (refusedForContent(e)) return this.oneByOne(ops);
        await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** attempt, 5000)));
      }
    }
  }

  private async oneByOne(ops: Op[]): Promise<void> {
    for (const op of ops) {
      for (let attempt = 0; !this.stopped; attempt++) {
        try {
          await apply(this.sql, this.source, [op]);
          break;
        } catch (e) {
          this.onError(e);
          if (refusedForContent(e)) {
            await this.sql`update index_state set skipped = skipped + 1 where id`.catch(() => {});
            await saveCursor(this.sql, op.at, this.source).catch(() => {});
            break;
          }
          await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** attempt, 5000)));
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

async function apply(sql: Sql, source: IngestSource, ops: Op[]): Promise<void> {
  let upserts: Extract<Op, { kind: 'upsert' }>[] = [];
  const flushUpserts = async () => {
    if (upserts.length) await indexRecords(sql, null, upserts);
    upserts = [];
  };
  for (const op of ops) {
    if (op.kind === 'upsert') {
      upserts.push(op);
      continue;
    }
    await flushUpserts();
    if (op.kind === 'delete') await removeRecord(sql, op.uri);
    else if (op.kind === 'purge') await purgeActor(sql, op.did);
    else if (op.kind === 'handle') await setHandle(sql, op.did, op.handle);
  }
  await flushUpserts();
  await saveCursor(sql, Math.max(...ops.map((o) => o.at)), source);
}

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint): the content, not the connection. */
function refusedForContent(e: unknown): boolean {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}
