import { IdResolver, MemoryCache } from '@atproto/identity';
import { type Event, Firehose } from '@atproto/sync';
import type { Sql } from '../db/index.ts';
import { LOCKS, lead } from '../db/index.ts';
import { metrics } from '../metrics/index.ts';
import { Batcher } from './batcher.ts';
import { guardKeyResolution } from './didGuard.ts';
import { JetstreamFollower } from './jetstream.ts';
import { accountOp, type Op } from './ops.ts';
import { lexRecordAsJson } from './shape.ts';
import { COLLECTIONS, pruneTombstones, readCursor, readJetstreamPosition } from './store.ts';

export interface IndexerOptions {
  sql: Sql;
  /**
   * Where the network's events come from: a relay's (or, offline, the local PDS's) firehose, which this
   * process decodes and verifies commit by commit; or a Jetstream instance, which filters to our
   * collections on its side and sends JSON (ADR 0039).
   */
  source: { kind: 'relay'; url: string } | { kind: 'jetstream'; url: string };
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
 * time across server processes: the leader holds an advisory lock; the others wait for it (db/leadership.ts). The cursor is
 * stored with each batch written, so a restart resumes where it stopped; upserts make a replay harmless.
 */
export function startIndexer(o: IndexerOptions): Indexer {
  return lead(o.sql, [LOCKS.indexerLeader], {
    name: 'indexer',
    log: o.log,
    retryMs: o.retryMs,
    async start() {
      const batcher = batcherFor(o);
      let source: ReturnType<typeof followerFor>;
      try {
        source = followerFor(o, batcher);
        source.start();
      } catch (e) {
        await batcher.close();
        throw e;
      }
      // Deletes are remembered for a while (store.ts: TOMBSTONE_DAYS), then let go, by the one leader.
      const pruning = setInterval(() => void pruneTombstones(o.sql).catch(() => {}), 60 * 60_000);
      pruning.unref();
      return async () => {
        await source.stop();
        clearInterval(pruning);
        await batcher.close();
      };
    },
  });
}

/** The batcher the leader writes its ops through. */
function batcherFor(o: IndexerOptions): Batcher {
  return new Batcher(
    o.sql,
    o.source.kind,
    {
      onError: (e) => o.log('indexer: a batch could not be written; retrying', e),
      onSkip: (uri, reason) => {
        metrics.indexerSkipped.inc();
        o.log(`indexer: skipped ${uri}: ${reason}`);
      },
    },
    new URL(o.source.url).host,
  );
}

/** The event stream the leader follows (Jetstream, or a relay's firehose), not started yet. */
function followerFor(o: IndexerOptions, batcher: Batcher): { start(): void; stop(): Promise<void> } {
  if (o.source.kind === 'jetstream') {
    return new JetstreamFollower({
      url: o.source.url,
      getCursor: () => readJetstreamPosition(o.sql),
      handle: (op) => batcher.add(op),
      isKnownActor: async (did) => (await o.sql`select 1 from index_actors where did = ${did}`).length > 0,
      onError: (message, e) => o.log(`indexer: ${message}`, e),
    });
  }
  const firehose = new Firehose({
    service: o.source.url,
    idResolver: relayResolver(o),
    // An identity event's handle is not resolved here: see relayResolver.
    unauthenticatedHandles: true,
    getCursor: () => readCursor(o.sql, 'relay'),
    filterCollections: [...COLLECTIONS],
    handleEvent: (evt) => batcher.add(relayOp(evt)),
    onError: (err) => o.log('indexer: an event could not be processed', err),
  });
  return {
    start: () => void firehose.start().catch((e) => o.log('indexer stopped', e)),
    stop: () => firehose.destroy(),
  };
}

/**
 * What the relay path verifies with. A commit is verified against its author's key; a DID that fails to resolve is
 * not retried on every commit it sends, and a key that does not verify is read afresh at most once in a while
 * (didGuard.ts). An identity event resolves nothing: the relay sends one for any account on the network, and
 * @atproto/sync would resolve its DID and then its handle (DNS, then HTTPS) in line, one event after another, so a
 * stranger's slow DID or handle host held up the whole index. Nor does it drop the cached document: a stranger
 * sending identity events between commits would have the index wait on their DID host for each. A rotated key is
 * found when a commit does not verify. A known author's handle is hidden until it is verified again both ways
 * when next shown (read.ts), as on Jetstream (ADR 0106).
 */
function relayResolver(o: IndexerOptions): IdResolver {
  const ids = new IdResolver({ plcUrl: o.plcUrl, didCache: new MemoryCache(), fetch: o.fetch });
  guardKeyResolution(ids.did);
  const did = {
    resolveAtprotoKey: (d: string, forceRefresh?: boolean) => ids.did.resolveAtprotoKey(d, forceRefresh),
    // Called by @atproto/sync for identity events only (commits go through resolveAtprotoKey above).
    resolve: async () => null,
  };
  return { did, handle: ids.handle } as unknown as IdResolver;
}

/**
 * A relay event, already verified by @atproto/sync (signature, proofs, handle), as an index op. Never throws:
 * a record too deep or too large to convert is decided here as a skip, so the cursor moves past it.
 */
export function relayOp(evt: Event): Op {
  switch (evt.event) {
    case 'create':
    case 'update': {
      const { record, refused } = lexRecordAsJson(evt.record);
      // A refused record is refused where it is stored (skipped, counted, logged, any older version dropped).
      return {
        kind: 'upsert',
        at: evt.seq,
        did: evt.did,
        collection: evt.collection,
        rkey: evt.rkey,
        cid: evt.cid.toString(),
        record,
        rev: evt.rev,
        ...(refused ? { refused } : {}),
      };
    }
    case 'delete':
      return { kind: 'delete', at: evt.seq, uri: evt.uri.toString(), rev: evt.rev };
    case 'account':
      return accountOp(evt.seq, evt.did, evt.active, evt.status);
    case 'identity':
      // Not resolved (relayResolver): hidden until verified again both ways when next shown.
      return { kind: 'handle', at: evt.seq, did: evt.did, handle: null };
    default:
      return { kind: 'skip', at: (evt as { seq: number }).seq };
  }
}
