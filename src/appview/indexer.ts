import { IdResolver, MemoryCache } from '@atproto/identity';
import { lexToJson } from '@atproto/lexicon';
import { type Event, Firehose } from '@atproto/sync';
import type { Sql } from '../db/index.ts';
import { LOCKS } from '../db/index.ts';
import {
  COLLECTIONS,
  indexRecords,
  purgeActor,
  readCursor,
  removeRecord,
  saveCursor,
  setHandle,
} from './store.ts';

const LEADER_LOCK = LOCKS.indexerLeader;

export interface IndexerOptions {
  sql: Sql;
  /** The relay or PDS whose event stream to follow (ws:// or wss://). */
  service: string;
  plcUrl: string;
  /** Offline: the local PLC speaks plain http. */
  local: boolean;
  /** The outbound fetch DID documents are read with (see outbound/). */
  fetch: typeof globalThis.fetch;
  log: (message: string, error?: unknown) => void;
  /** How often a follower checks whether it can become the leader. */
  retryMs?: number;
}

export interface Indexer {
  /** Resolves once this process is the one indexer (tests wait on it). */
  leading: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Follows the network's event stream, filtered to click.aligned.chat.*, into the index. One indexer runs at a
 * time across server processes: the leader holds an advisory lock; the others wait for it. The cursor is
 * stored with each batch written, so a restart resumes where it stopped; upserts make a replay harmless.
 */
export function startIndexer(o: IndexerOptions): Indexer {
  let stopped = false;
  let firehose: Firehose | undefined;
  let release: (() => Promise<void>) | undefined;
  let flushCursor = async () => {};
  let lead!: () => void;
  const leading = new Promise<void>((resolve) => {
    lead = resolve;
  });

  const run = async () => {
    const conn = await o.sql.reserve();
    while (!stopped) {
      const [row] = await conn<{ ok: boolean }[]>`select pg_try_advisory_lock(${LEADER_LOCK}) as ok`;
      if (row?.ok) break;
      await new Promise((r) => setTimeout(r, o.retryMs ?? 5000));
    }
    release = async () => {
      await conn`select pg_advisory_unlock(${LEADER_LOCK})`.catch(() => {});
      conn.release();
    };
    if (stopped) return;
    // Events are buffered and written in bulk, in order, every 50 ms or 500 events; the cursor saved is
    // the last event written, so a restart replays only what was not yet in the index.
    const batcher = new Batcher(o.sql, (e) => o.log('indexer: a batch could not be written; retrying', e));
    flushCursor = async () => {
      // One last try to store what has arrived, then give up: an unstored batch is replayed next time.
      const last = batcher.flush();
      const timer = setTimeout(() => batcher.stop(), 2000);
      await last;
      clearTimeout(timer);
      batcher.stop();
    };
    const idResolver = new IdResolver({
      plcUrl: o.plcUrl,
      didCache: new MemoryCache(),
      fetch: o.fetch,
    });
    firehose = new Firehose({
      service: o.service,
      idResolver,
      getCursor: () => readCursor(o.sql),
      filterCollections: [...COLLECTIONS],
      handleEvent: (evt) => batcher.add(evt),
      onError: (err) => o.log('indexer: an event could not be processed', err),
    });
    lead();
    firehose.start().catch((e) => o.log('indexer stopped', e));
  };
  const running = run().catch((e) => o.log('indexer failed to start', e));

  return {
    leading,
    async stop() {
      stopped = true;
      await firehose?.destroy();
      await running;
      await flushCursor();
      await release?.();
    },
  };
}

type Op =
  | {
      kind: 'upsert';
      seq: number;
      did: string;
      collection: string;
      rkey: string;
      cid: string;
      record: unknown;
    }
  | { kind: 'delete'; seq: number; uri: string }
  | { kind: 'purge'; seq: number; did: string }
  | { kind: 'handle'; seq: number; did: string; handle: string | null }
  | { kind: 'skip'; seq: number };

/** Buffers events and applies them in order, consecutive upserts as one bulk statement. */
class Batcher {
  private ops: Op[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly sql: Sql,
    private readonly onError: (e: unknown) => void,
  ) {}

  async add(evt: Event): Promise<void> {
    this.ops.push(toOp(evt));
    // Waiting here holds the event stream back while a batch cannot be written, so nothing piles up.
    if (this.ops.length >= 500) await this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), 50);
  }

  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const ops = this.ops;
    this.ops = [];
    this.writing = this.writing.then(() => (ops.length ? this.write(ops) : undefined));
    return this.writing;
  }

  /**
   * Writes a batch, and on a storage failure writes the same batch again (backing off) until it is stored:
   * the cursor is saved with the batch, so it never moves past an event that is not in the index. Stopping
   * gives up the batch without saving its cursor; the next start replays it (every op is idempotent).
   */
  private async write(ops: Op[]): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        await apply(this.sql, ops);
        return;
      } catch (e) {
        this.onError(e);
        await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** attempt, 5000)));
      }
    }
  }

  stop() {
    this.stopped = true;
  }
}

function toOp(evt: Event): Op {
  switch (evt.event) {
    case 'create':
    case 'update':
      return {
        kind: 'upsert',
        seq: evt.seq,
        did: evt.did,
        collection: evt.collection,
        rkey: evt.rkey,
        cid: evt.cid.toString(),
        record: lexToJson(evt.record as never),
      };
    case 'delete':
      return { kind: 'delete', seq: evt.seq, uri: evt.uri.toString() };
    case 'account':
      return !evt.active && (evt.status === 'deleted' || evt.status === 'takendown')
        ? { kind: 'purge', seq: evt.seq, did: evt.did }
        : { kind: 'skip', seq: evt.seq };
    case 'identity':
      // @atproto/sync verified the handle both ways; none means it did not verify (hidden until re-checked).
      return { kind: 'handle', seq: evt.seq, did: evt.did, handle: evt.handle ?? null };
    default:
      return { kind: 'skip', seq: (evt as { seq: number }).seq };
  }
}

async function apply(sql: Sql, ops: Op[]): Promise<void> {
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
  await saveCursor(sql, Math.max(...ops.map((o) => o.seq)));
}
