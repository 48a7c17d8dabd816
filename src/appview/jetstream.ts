import WebSocket from 'ws';
import { cidMatches, parseJetstreamMessage } from './jetstreamEvent.ts';
import type { Op } from './ops.ts';
import type { JetstreamPosition } from './store.ts';

/** Our collections, as one Jetstream filter (prefix wildcards are part of its protocol). */
export const WANTED_COLLECTIONS = 'click.aligned.chat.*';
/** A record is at most 1 MiB of CBOR; its JSON is larger, but not this much. Bigger messages close the socket. */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/**
 * Resuming rewinds the cursor this far: each Jetstream instance stamps its own times, so after a reconnect
 * to another one the same event may carry a slightly different time. Replaying is harmless (idempotent).
 */
const REWIND_US = 2_000_000;
/** Messages (and bytes) taken in ahead of the index: past either the socket is paused, so memory stays bounded. */
const HIGH_WATER = 2000;
const LOW_WATER = 200;
const HIGH_WATER_BYTES = 64 * 1024 * 1024;
const PING_MS = 30_000;

export interface JetstreamOptions {
  /** The subscribe endpoint, e.g. wss://jetstream2.us-east.bsky.network/subscribe */
  url: string;
  getCursor: () => Promise<JetstreamPosition>;
  handle: (op: Op) => Promise<void>;
  /** Identity events matter only for authors the index holds. */
  isKnownActor: (did: string) => Promise<boolean>;
  onError: (message: string, e?: unknown) => void;
}

/**
 * Follows a Jetstream instance: JSON over WebSocket, filtered to our collections by the server, so this
 * process decodes only our records instead of every commit on the network. Reconnects with backoff from
 * the last event it took in (or the stored cursor), and pauses the socket while the index is behind.
 */
export class JetstreamFollower {
  private ws: WebSocket | undefined;
  private stopped = false;
  private queue: Promise<void> = Promise.resolve();
  private pending = 0;
  private pendingBytes = 0;
  private attempt = 0;
  private lastAt: number | undefined;
  /** The last v2 event number taken in from this instance. */
  private lastSeq: number | undefined;
  private retry: NodeJS.Timeout | undefined;

  constructor(private readonly o: JetstreamOptions) {}

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
    const url = new URL(this.o.url);
    let at: JetstreamPosition;
    try {
      at = this.lastAt !== undefined ? { timeUs: this.lastAt } : await this.o.getCursor();
    } catch (e) {
      this.o.onError('jetstream: the cursor could not be read', e);
      return this.reconnectLater();
    }
    const seq = this.lastSeq ?? (at.host === url.host ? at.seq : undefined);
    url.searchParams.set('wantedCollections', WANTED_COLLECTIONS);
    url.searchParams.set('maxMessageSizeBytes', String(MAX_MESSAGE_BYTES));
    // The same instance's own event number resumes exactly (v2); a time is rewound a little, since each
    // instance stamps its own times. Replaying is harmless (idempotent).
    if (seq !== undefined) url.searchParams.set('cursor', String(seq));
    else if (at.timeUs !== undefined)
      url.searchParams.set('cursor', String(Math.max(0, at.timeUs - REWIND_US)));
    const ws = new WebSocket(url, { maxPayload: MAX_MESSAGE_BYTES, handshakeTimeout: 10_000 });
    this.ws = ws;
    let alive = true;
    const ping = setInterval(() => {
      // A connection that stopped answering is ended; a quiet one (few events of ours) is not.
      if (!alive) return ws.terminate();
      alive = false;
      ws.ping();
    }, PING_MS);
    ws.on('pong', () => {
      alive = true;
    });
    ws.on('open', () => {
      this.attempt = 0;
    });
    ws.on('message', (data, isBinary) => {
      const size = (data as Buffer).length ?? 0;
      this.pending++;
      this.pendingBytes += size;
      if (this.pending > HIGH_WATER || this.pendingBytes > HIGH_WATER_BYTES) ws.pause();
      const text = isBinary ? null : data.toString();
      this.queue = this.queue
        .then(() =>
          text === null
            ? this.o.onError('jetstream: a binary message (compression was not asked for)')
            : this.take(text),
        )
        .catch((e) => this.o.onError('jetstream: an event could not be processed', e))
        .finally(() => {
          this.pending--;
          this.pendingBytes -= size;
          if (this.pending < LOW_WATER && this.pendingBytes < HIGH_WATER_BYTES / 4 && ws.isPaused)
            ws.resume();
        });
    });
    ws.on('error', (e) => this.o.onError('jetstream: connection error', e));
    ws.on('close', () => {
      clearInterval(ping);
      if (this.ws === ws) this.ws = undefined;
      // Reconnect once what arrived is handed to the index, from the last event taken in.
      void this.queue.then(() => this.reconnectLater());
    });
  }

  private reconnectLater() {
    if (this.stopped) return;
    const delay = Math.min(500 * 2 ** this.attempt++, 30_000);
    this.retry = setTimeout(() => void this.connect(), delay);
  }

  private async take(text: string) {
    const parsed = parseJetstreamMessage(text);
    let op: Op;
    if (parsed.kind === 'op') op = parsed.op;
    else if (parsed.kind === 'record') {
      const ok = await cidMatches(parsed.op.cid, parsed.op.record);
      if (!ok) this.o.onError(`jetstream: ${parsed.op.did}/${parsed.op.rkey}: the cid is not the record's`);
      op = ok ? parsed.op : { kind: 'skip', at: parsed.op.at };
    } else if (parsed.kind === 'identity') {
      // A known author's handle may have changed: hidden until it is verified again both ways when next shown
      // (appview/lookups.ts). Not resolved here: a slow DID or handle host must not hold up the stream.
      op = (await this.o.isKnownActor(parsed.did))
        ? { kind: 'handle', at: parsed.at, did: parsed.did, handle: null }
        : { kind: 'skip', at: parsed.at };
    } else {
      this.o.onError(`jetstream: an event was ignored (${parsed.reason})`);
      if (parsed.at === null) return;
      op = { kind: 'skip', at: parsed.at };
    }
    this.lastAt = op.at;
    if (parsed.seq !== undefined) {
      this.lastSeq = parsed.seq;
      op = { ...op, seq: parsed.seq };
    }
    await this.o.handle(op);
  }
}
