// A worker thread that replays a recorded stream to the indexer at a paced rate, as a relay (CBOR frames) or
// a Jetstream instance (JSON, our collections only) would send it. Its own thread, so sending does not take
// the indexer's event loop; PostgreSQL and the indexer share the other core.
import type { AddressInfo } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { decodeAll, encode } from '@atproto/lex-cbor';
import { type WebSocket, WebSocketServer } from 'ws';

export interface ReplayData {
  /** The relay's frames (header + body), in order. */
  frames: Uint8Array[];
  /** The same events as Jetstream JSON, per frame: null where the frame holds nothing of ours. */
  jetstream: (Record<string, unknown> | null)[];
}
export type Command = { source: 'relay' | 'jetstream'; rate: number; count: number };

const { frames, jetstream } = workerData as ReplayData;
const decoded = frames.map(
  (f) => [...decodeAll(f)] as unknown as [Record<string, unknown>, Record<string, unknown>],
);
let seq = 1_000_000;
let timeUs = Date.now() * 1000;
const clients = new Set<WebSocket>();
const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
wss.on('connection', (ws) => {
  clients.add(ws);
  ws.on('close', () => clients.delete(ws));
});
wss.on('listening', () => parentPort!.postMessage({ port: (wss.address() as AddressInfo).port }));

parentPort!.on('message', async (c: Command) => {
  // Prepared before the clock starts: each network event gets its own position (seq, or time in µs), and
  // Jetstream records their own record key (the cid is of the record alone, so it stays valid).
  const out: (Uint8Array | string | null)[] = [];
  let last = 0;
  for (let i = 0; i < c.count; i++) {
    const k = i % frames.length;
    if (c.source === 'relay') {
      const [header, body] = decoded[k]!;
      seq++;
      // The cursor moves only on events that reach the index: the step ends at its last one of ours.
      if (jetstream[k]) last = seq;
      out.push(Buffer.concat([encode(header as never), encode({ ...body, seq } as never)]));
    } else {
      timeUs += 1;
      const e = jetstream[k];
      if (!e) {
        out.push(null);
        continue;
      }
      last = timeUs;
      const commit = e.commit as Record<string, unknown>;
      out.push(
        JSON.stringify({
          ...e,
          time_us: timeUs,
          commit: { ...commit, rkey: `${commit.rkey}${i.toString(36)}` },
        }),
      );
    }
  }
  const ws = [...clients][0]!;
  parentPort!.postMessage({ ready: true });
  const started = performance.now();
  // Paced in 5 ms ticks; a consumer that cannot keep up pushes back through the socket's buffer.
  let i = 0;
  while (i < out.length) {
    const due = Math.min(out.length, Math.ceil(((performance.now() - started) / 1000) * c.rate));
    while (i < due && ws.bufferedAmount < 8 * 1024 * 1024) {
      const m = out[i++];
      if (m !== null && m !== undefined) ws.send(m);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  parentPort!.postMessage({ last, sentMs: performance.now() - started });
});
