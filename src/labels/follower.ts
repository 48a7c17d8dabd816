import WebSocket from 'ws';
import type { Sql } from '../db/index.ts';
import { metrics } from '../metrics/index.ts';
import type { LabelerKeys } from './keys.ts';
import { decodeFrame, type Label, MAX_FRAME_BYTES } from './label.ts';
import { readLabelerCursor, storeLabels } from './store.ts';

const NSID = 'com.atproto.label.subscribeLabels';
/** Frames taken in ahead of the database: past this the socket is paused, so memory stays bounded. */
const HIGH_WATER = 100;
const LOW_WATER = 10;
const PING_MS = 30_000;
/** Back-off between reconnects: doubling from the first to the last, with jitter; reset after a minute up. */
const BACKOFF_FIRST_MS = 1000;
const BACKOFF_MAX_MS = 5 * 60_000;
const STABLE_MS = 60_000;

export interface FollowerOptions {
  sql: Sql;
  did: string;
  /** Configured service URL (http(s) or ws(s)); otherwise the DID document's `#atproto_labeler`. */
  url?: string;
  keys: LabelerKeys;
  log: (message: string, error?: unknown) => void;
  /** Tests shorten the back-off. */
  backoffFirstMs?: number;
}

/** subscribeLabels' address under a labeler's service, resuming after `cursor`. */
export function subscribeUrl(service: string, cursor: number | undefined): URL {
  const url = new URL(service.replace(/^http/, 'ws'));
  if (!url.pathname.endsWith(NSID)) url.pathname = `${url.pathname.replace(/\/$/, '')}/xrpc/${NSID}`;
  if (cursor !== undefined) url.searchParams.set('cursor', String(cursor));
  return url;
}

/**
 * Follows one labeler's subscribeLabels stream into the labels table: every label's signature checked against the
 * labeler's key, each frame stored with its seq in one transaction, reconnecting with back-off from the stored
 * cursor. A frame that is not one, or carries labels that fail their signature, is counted and logged; the cursor
 * moves past it (a labeler's bad frame must not stop its good ones).
 */
export class LabelerFollower {
  private ws: WebSocket | undefined;
  private stopped = false;
  private queue: Promise<void> = Promise.resolve();
  private pending = 0;
  private attempt = 0;
  private retry: NodeJS.Timeout | undefined;

  constructor(private readonly o: FollowerOptions) {}

  start() {
    void this.connect();
  }

  async stop() {
    this.stopped = true;
    clearTimeout(this.retry);
    this.ws?.terminate();
    await this.queue;
  }

  private async connect() {
    if (this.stopped) return;
    let url: URL;
    try {
      const service = await this.o.keys.endpoint(this.o.did, this.o.url);
      if (!service) throw new Error('its DID document names no #atproto_labeler https service');
      url = subscribeUrl(service, await readLabelerCursor(this.o.sql, this.o.did));
    } catch (e) {
      this.o.log(`labels: ${this.o.did} could not be reached`, e);
      return this.reconnectLater();
    }
    const ws = new WebSocket(url, { maxPayload: MAX_FRAME_BYTES, handshakeTimeout: 10_000 });
    this.ws = ws;
    let alive = true;
    let openedAt = 0;
    // A frame that could not be stored ends this connection: the frames queued behind it are dropped, and the
    // next connection starts again from the last frame stored (never past one whose labels were lost).
    let failed = false;
    const ping = setInterval(() => {
      if (!alive) return ws.terminate();
      alive = false;
      ws.ping();
    }, PING_MS);
    ws.on('pong', () => {
      alive = true;
    });
    ws.on('open', () => {
      openedAt = Date.now();
    });
    ws.on('message', (data: Buffer) => {
      if (++this.pending > HIGH_WATER) ws.pause();
      this.queue = this.queue
        .then(() => (failed ? undefined : this.take(new Uint8Array(data))))
        .catch((e) => {
          failed = true;
          ws.terminate();
          this.o.log(`labels: a frame from ${this.o.did} could not be stored; reconnecting`, e);
        })
        .finally(() => {
          if (--this.pending < LOW_WATER && ws.isPaused) ws.resume();
        });
    });
    ws.on('error', (e) => this.o.log(`labels: connection to ${this.o.did}`, e));
    ws.on('close', () => {
      clearInterval(ping);
      if (this.ws === ws) this.ws = undefined;
      // A connection that stayed up a while starts the back-off again; one that drops at once keeps doubling it.
      if (openedAt && Date.now() - openedAt > STABLE_MS) this.attempt = 0;
      void this.queue.then(() => this.reconnectLater());
    });
  }

  private reconnectLater() {
    if (this.stopped) return;
    const first = this.o.backoffFirstMs ?? BACKOFF_FIRST_MS;
    const ceiling = Math.min(first * 2 ** this.attempt++, BACKOFF_MAX_MS);
    this.retry = setTimeout(() => void this.connect(), ceiling / 2 + Math.random() * (ceiling / 2));
  }

  private async take(bytes: Uint8Array) {
    const message = decodeFrame(bytes);
    const did = this.o.did;
    if (message.kind === 'info')
      return this.o.log(`labels: ${did} says ${message.name}: ${message.message ?? ''}`);
    if (message.kind === 'error') {
      this.o.log(`labels: ${did} ended the stream: ${message.code} ${message.message ?? ''}`);
      return;
    }
    if (message.kind === 'refused') {
      metrics.labelsRefused.inc({ reason: 'frame' });
      this.o.log(`labels: a frame from ${did} was refused (${message.reason})`);
      if (message.seq !== undefined) await storeLabels(this.o.sql, did, message.seq, []);
      return;
    }
    if (message.malformed) metrics.labelsRefused.inc({ reason: 'shape' }, message.malformed);
    const verified: Label[] = [];
    for (const label of message.labels) {
      if (await this.o.keys.verify(did, label)) verified.push(label);
      else {
        metrics.labelsRefused.inc({ reason: 'signature' });
        this.o.log(`labels: ${did}: a label ${label.val} on ${label.uri} failed its signature; ignored`);
      }
    }
    await storeLabels(this.o.sql, did, message.seq, verified);
    metrics.labelsStored.inc(verified.length);
  }
}
