import type { Sql } from '../db/index.ts';
import { metrics } from '../metrics/index.ts';
import { FollowedSocket, type SocketPolicy } from '../outbound/index.ts';
import type { LabelerKeys } from './keys.ts';
import { decodeFrame, type Label, MAX_FRAME_BYTES } from './label.ts';
import { readLabelerCursor, storeLabels } from './store.ts';

const NSID = 'com.atproto.label.subscribeLabels';
/** Frames taken in ahead of the database: past this the socket is paused, so memory stays bounded. */
const HIGH_WATER = 100;
const LOW_WATER = 10;
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
  /** The network's address policy: a DID document may name any host. */
  policy?: SocketPolicy;
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
  private readonly socket: FollowedSocket;

  constructor(private readonly o: FollowerOptions) {
    this.socket = new FollowedSocket({
      address: () => this.address(),
      take: (data) => this.take(new Uint8Array(data)),
      maxPayload: MAX_FRAME_BYTES,
      highWater: HIGH_WATER,
      lowWater: LOW_WATER,
      backoff: {
        firstMs: o.backoffFirstMs ?? BACKOFF_FIRST_MS,
        maxMs: BACKOFF_MAX_MS,
        jitter: true,
        stableMs: STABLE_MS,
      },
      // A frame that could not be stored ends the connection: the next starts again from the last frame stored
      // (never past one whose labels were lost).
      onTakeError: 'reconnect',
      log: (message, e) => this.o.log(`labels: ${this.o.did}: ${message}`, e),
      // The operator's own `did|url` is taken as configured; an address from a DID document meets the policy.
      policy: o.url ? undefined : o.policy,
    });
  }

  start() {
    this.socket.start();
  }

  stop() {
    return this.socket.stop();
  }

  private async address(): Promise<URL> {
    const service = await this.o.keys.endpoint(this.o.did, this.o.url);
    if (!service) throw new Error('its DID document names no #atproto_labeler https service');
    return subscribeUrl(service, await readLabelerCursor(this.o.sql, this.o.did));
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
