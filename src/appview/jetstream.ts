import { FollowedSocket } from '../outbound/index.ts';
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
  private readonly socket: FollowedSocket;
  private lastAt: number | undefined;
  /** The last v2 event number taken in from this instance. */
  private lastSeq: number | undefined;

  constructor(private readonly o: JetstreamOptions) {
    this.socket = new FollowedSocket({
      address: () => this.address(),
      take: (data, isBinary) =>
        isBinary
          ? Promise.resolve(this.o.onError('jetstream: a binary message (compression was not asked for)'))
          : this.take(data.toString()),
      maxPayload: MAX_MESSAGE_BYTES,
      highWater: HIGH_WATER,
      lowWater: LOW_WATER,
      highWaterBytes: HIGH_WATER_BYTES,
      backoff: { firstMs: 500, maxMs: 30_000 },
      onTakeError: 'continue',
      log: (message, e) => this.o.onError(`jetstream: ${message}`, e),
    });
  }

  start() {
    this.socket.start();
  }

  stop() {
    return this.socket.stop();
  }

  private async address(): Promise<URL> {
    const url = new URL(this.o.url);
    const at: JetstreamPosition =
      this.lastAt !== undefined ? { timeUs: this.lastAt } : await this.o.getCursor();
    const seq = this.lastSeq ?? (at.host === url.host ? at.seq : undefined);
    url.searchParams.set('wantedCollections', WANTED_COLLECTIONS);
    url.searchParams.set('maxMessageSizeBytes', String(MAX_MESSAGE_BYTES));
    // The same instance's own event number resumes exactly (v2); a time is rewound a little, since each
    // instance stamps its own times. Replaying is harmless (idempotent).
    if (seq !== undefined) url.searchParams.set('cursor', String(seq));
    else if (at.timeUs !== undefined)
      url.searchParams.set('cursor', String(Math.max(0, at.timeUs - REWIND_US)));
    return url;
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
