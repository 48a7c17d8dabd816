import type { AddressInfo } from 'node:net';
import { IdResolver, MemoryCache } from '@atproto/identity';
import { lexToJson } from '@atproto/lexicon';
import { type Event, Firehose } from '@atproto/sync';
import { type WebSocket, WebSocketServer } from 'ws';

/**
 * A small server speaking Jetstream's documented protocol (JSON over WebSocket at /subscribe, with
 * wantedCollections — exact or `prefix.*` —, cursor in microseconds and maxMessageSizeBytes), fed from a PDS's
 * firehose: the real Jetstream is a Go service not available here. It keeps every event, so a cursor replays.
 */
export interface TestJetstream {
  url: string;
  /** Starts reading a PDS's (or relay's) firehose. */
  follow(firehoseUrl: string, plcUrl: string): void;
  /** Appends an event as a hostile or broken instance would send it (`time_us` added when missing). */
  inject(event: Record<string, unknown> | string, opts?: { live?: boolean; raw?: boolean }): number;
  /** Each connection's query, in order. */
  connections: URLSearchParams[];
  /** Commit events sent, by collection. */
  sent: Map<string, number>;
  close(): Promise<void>;
}

interface Entry {
  timeUs: number;
  /** The v2 event number (1, 2, …), sent as `cursor` when the server speaks v2. */
  seq: number;
  collection: string | null;
  text: string;
}

export function jetstreamJson(evt: Event, timeUs: number): Record<string, unknown> | null {
  const base = { did: evt.did, time_us: timeUs };
  switch (evt.event) {
    case 'create':
    case 'update':
      return {
        ...base,
        kind: 'commit',
        commit: {
          rev: evt.rev,
          operation: evt.event,
          collection: evt.collection,
          rkey: evt.rkey,
          record: lexToJson(evt.record as never),
          cid: evt.cid.toString(),
        },
      };
    case 'delete':
      return {
        ...base,
        kind: 'commit',
        commit: { rev: evt.rev, operation: 'delete', collection: evt.collection, rkey: evt.rkey },
      };
    case 'identity':
      return {
        ...base,
        kind: 'identity',
        identity: { did: evt.did, handle: evt.handle, seq: evt.seq, time: evt.time },
      };
    case 'account':
      return {
        ...base,
        kind: 'account',
        account: { active: evt.active, did: evt.did, seq: evt.seq, time: evt.time, status: evt.status },
      };
    default:
      return null;
  }
}

/** Whether Jetstream would send an event with this collection (null: identity and account, sent to all). */
export function wanted(collection: string | null, patterns: string[]): boolean {
  if (collection === null || patterns.length === 0) return true;
  return patterns.some((p) => (p.endsWith('.*') ? collection.startsWith(p.slice(0, -1)) : p === collection));
}

/**
 * `v2`: number each event (`cursor`, as Jetstream v2 does) and take a cursor below 10^15 as that number;
 * otherwise only times (v1).
 */
export async function startJetstream(o: { v2?: boolean } = {}): Promise<TestJetstream> {
  const log: Entry[] = [];
  let lastSeq = 0;
  const numbered = (json: Record<string, unknown>) => {
    const seq = ++lastSeq;
    return { seq, text: JSON.stringify(o.v2 ? { ...json, cursor: seq } : json) };
  };
  const clients = new Set<{ ws: WebSocket; wanted: string[]; max: number }>();
  const connections: URLSearchParams[] = [];
  const sent = new Map<string, number>();
  let lastUs = 0;
  let firehose: Firehose | undefined;
  const stamp = () => {
    lastUs = Math.max(Date.now() * 1000, lastUs + 1);
    return lastUs;
  };
  const send = (c: { ws: WebSocket; wanted: string[]; max: number }, e: Entry, raw = false) => {
    if (!raw && (!wanted(e.collection, c.wanted) || Buffer.byteLength(e.text) > c.max)) return;
    if (e.collection) sent.set(e.collection, (sent.get(e.collection) ?? 0) + 1);
    c.ws.send(e.text);
  };
  const publish = (e: Entry, opts: { live?: boolean; raw?: boolean } = {}) => {
    if (!opts.live) log.push(e);
    for (const c of clients) send(c, e, opts.raw);
  };

  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', path: '/subscribe' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  wss.on('connection', (ws, req) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    connections.push(q);
    const c = {
      ws,
      wanted: q.getAll('wantedCollections'),
      max: Number(q.get('maxMessageSizeBytes') ?? Infinity),
    };
    const cursor = q.get('cursor');
    const bySeq = o.v2 && cursor !== null && Number(cursor) < 1e15;
    if (cursor !== null) for (const e of log) if ((bySeq ? e.seq : e.timeUs) >= Number(cursor)) send(c, e);
    clients.add(c);
    ws.on('close', () => clients.delete(c));
    ws.on('error', () => {});
  });

  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/subscribe`,
    connections,
    sent,
    follow(firehoseUrl, plcUrl) {
      firehose = new Firehose({
        service: firehoseUrl,
        idResolver: new IdResolver({ plcUrl, didCache: new MemoryCache() }),
        unauthenticatedCommits: true,
        unauthenticatedHandles: true,
        handleEvent: async (evt) => {
          const timeUs = stamp();
          const json = jetstreamJson(evt, timeUs);
          if (!json) return;
          const collection = 'collection' in evt ? (evt.collection as string) : null;
          publish({ timeUs, collection, ...numbered(json) });
        },
        onError: () => {},
      });
      void firehose.start();
    },
    inject(event, opts) {
      const timeUs = stamp();
      const { seq, text } =
        typeof event === 'string' ? { seq: ++lastSeq, text: event } : numbered({ time_us: timeUs, ...event });
      const commit =
        typeof event === 'string' ? undefined : (event.commit as { collection?: string } | undefined);
      publish({ timeUs, seq, collection: commit?.collection ?? null, text }, opts);
      return timeUs;
    },
    async close() {
      await firehose?.destroy();
      for (const c of clients) c.ws.terminate();
      await new Promise<void>((r) => wss.close(() => r()));
    },
  };
}
