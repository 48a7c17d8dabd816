import type { LookupFunction } from 'node:net';
import WebSocket from 'ws';

/** Back-off between reconnects: doubling from `firstMs` up to `maxMs`. */
export interface Backoff {
  firstMs: number;
  maxMs: number;
  /** Wait a random time between half the step and the step, so many followers don't reconnect in step. */
  jitter?: boolean;
  /** A connection up this long starts the back-off again; without it, every connection that opens does. */
  stableMs?: number;
}

export interface FollowOptions {
  /** Where to connect now (the resume cursor in it). Throwing is logged, and tried again after the back-off. */
  address: () => Promise<URL>;
  /** Takes one message, in arrival order: the next waits for it. */
  take: (data: Buffer, isBinary: boolean) => Promise<void>;
  /** A message larger than this closes the socket. */
  maxPayload: number;
  /** Messages (and bytes) taken in ahead of `take`: past either the socket is paused, so memory stays bounded. */
  highWater: number;
  lowWater: number;
  highWaterBytes?: number;
  backoff: Backoff;
  /**
   * What a `take` that throws does: `continue` logs it and goes on with the next message; `reconnect` drops the
   * messages queued behind it and connects again, resuming from wherever `address` says (never past a lost one).
   */
  onTakeError: 'continue' | 'reconnect';
  log: (message: string, e?: unknown) => void;
  /** The outbound address policy for where it connects (a URL from a DID document may name any host). */
  policy?: SocketPolicy;
}

/** Whether a URL may be used at all, and how its host resolves (checked in the same call as the connect). */
export interface SocketPolicy {
  check: (url: URL) => void;
  lookup?: LookupFunction;
}

const PING_MS = 30_000;

/**
 * A stream followed over a WebSocket for as long as the server runs (a Jetstream instance, a labeler): one
 * message at a time handed on in order, the socket paused while they pile up, a silent connection ended by
 * ping, and reconnects with back-off from wherever `address` says to resume.
 */
export class FollowedSocket {
  private ws: WebSocket | undefined;
  private stopped = false;
  private queue: Promise<void> = Promise.resolve();
  private pending = 0;
  private pendingBytes = 0;
  private attempt = 0;
  private retry: NodeJS.Timeout | undefined;

  constructor(private readonly o: FollowOptions) {}

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
      url = await this.o.address();
      this.o.policy?.check(url);
    } catch (e) {
      this.o.log('could not connect', e);
      return this.reconnectLater();
    }
    // ws hands its options on to http(s).request, so the policy's lookup resolves the host it connects to.
    const ws = new WebSocket(url, {
      maxPayload: this.o.maxPayload,
      handshakeTimeout: 10_000,
      lookup: this.o.policy?.lookup,
    } as WebSocket.ClientOptions);
    this.ws = ws;
    let alive = true;
    let openedAt = 0;
    // With `reconnect`, a message that failed ends this connection: the ones queued behind it are not taken.
    let failed = false;
    const ping = setInterval(() => {
      // A connection that stopped answering is ended; a quiet one (few events) is not.
      if (!alive) return ws.terminate();
      alive = false;
      ws.ping();
    }, PING_MS);
    ws.on('pong', () => {
      alive = true;
    });
    ws.on('open', () => {
      openedAt = Date.now();
      if (this.o.backoff.stableMs === undefined) this.attempt = 0;
    });
    ws.on('message', (data: Buffer, isBinary: boolean) =>
      this.queued(
        ws,
        data,
        isBinary,
        () => failed,
        (f) => {
          failed = f;
        },
      ),
    );
    ws.on('error', (e) => this.o.log('connection error', e));
    ws.on('close', () => {
      clearInterval(ping);
      if (this.ws === ws) this.ws = undefined;
      const { stableMs } = this.o.backoff;
      if (stableMs !== undefined && openedAt && Date.now() - openedAt > stableMs) this.attempt = 0;
      // Reconnect once what arrived is handed on, from wherever that leaves the cursor.
      void this.queue.then(() => this.reconnectLater());
    });
  }

  private queued(
    ws: WebSocket,
    data: Buffer,
    isBinary: boolean,
    failed: () => boolean,
    fail: (f: boolean) => void,
  ) {
    const size = data.length ?? 0;
    this.pending++;
    this.pendingBytes += size;
    const { highWater, lowWater, highWaterBytes = Number.POSITIVE_INFINITY } = this.o;
    if (this.pending > highWater || this.pendingBytes > highWaterBytes) ws.pause();
    this.queue = this.queue
      .then(() => (failed() ? undefined : this.o.take(data, isBinary)))
      .catch((e) => {
        if (this.o.onTakeError === 'continue') return this.o.log('a message could not be taken', e);
        fail(true);
        ws.terminate();
        this.o.log('a message could not be taken; reconnecting', e);
      })
      .finally(() => {
        this.pending--;
        this.pendingBytes -= size;
        if (this.pending < lowWater && this.pendingBytes < highWaterBytes / 4 && ws.isPaused) ws.resume();
      });
  }

  private reconnectLater() {
    if (this.stopped) return;
    const { firstMs, maxMs, jitter } = this.o.backoff;
    const step = Math.min(firstMs * 2 ** this.attempt++, maxMs);
    this.retry = setTimeout(() => void this.connect(), jitter ? step / 2 + Math.random() * (step / 2) : step);
  }
}
