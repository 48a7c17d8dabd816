import { IdResolver, MemoryCache } from '@atproto/identity';
import { lexToJson } from '@atproto/lexicon';
import { type Event, Firehose, MemoryRunner } from '@atproto/sync';
import type { Sql } from '../db/index.ts';
import {
  COLLECTIONS,
  indexRecord,
  purgeActor,
  readCursor,
  removeRecord,
  saveCursor,
  setHandle,
} from './store.ts';

const LEADER_LOCK = 7_240_004;

export interface IndexerOptions {
  sql: Sql;
  /** The relay or PDS whose event stream to follow (ws:// or wss://). */
  service: string;
  plcUrl: string;
  /** Offline: the local PLC speaks plain http. */
  local: boolean;
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
 * stored as events are processed, so a restart resumes where it stopped; upserts make a replay harmless.
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
    const startCursor = await readCursor(o.sql);
    const knownActors = new Set<string>();
    // The cursor is written at most every 250 ms, not per event: a restart replays at most that window, and
    // replaying is harmless (upserts and deletes by at-uri).
    let latest: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    flushCursor = async () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (latest !== undefined)
        await saveCursor(o.sql, latest).catch((e) => o.log('indexer: cursor not saved', e));
    };
    const runner = new MemoryRunner({
      startCursor,
      setCursor: async (c) => {
        latest = c;
        timer ??= setTimeout(() => void flushCursor(), 250);
      },
    });
    const idResolver = new IdResolver({
      plcUrl: o.plcUrl,
      didCache: new MemoryCache(),
      fetch: o.local ? globalThis.fetch : undefined,
    });
    firehose = new Firehose({
      service: o.service,
      idResolver,
      runner,
      filterCollections: [...COLLECTIONS],
      handleEvent: (evt) => handle(o.sql, evt, knownActors),
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

async function handle(sql: Sql, evt: Event, knownActors: Set<string>): Promise<void> {
  switch (evt.event) {
    case 'create':
    case 'update':
      await indexRecord(
        sql,
        {
          did: evt.did,
          collection: evt.collection,
          rkey: evt.rkey,
          cid: evt.cid.toString(),
          record: lexToJson(evt.record as never),
        },
        knownActors,
      );
      return;
    case 'delete':
      await removeRecord(sql, evt.uri.toString());
      return;
    case 'account':
      if (!evt.active && (evt.status === 'deleted' || evt.status === 'takendown'))
        await purgeActor(sql, evt.did);
      return;
    case 'identity':
      if (evt.handle) await setHandle(sql, evt.did, evt.handle);
      return;
  }
}
