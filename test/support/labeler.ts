import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Secp256k1Keypair } from '@atproto/crypto';
import { cborEncode } from '@atproto/lex-cbor';
import { MessageFrame } from '@atproto/xrpc-server';
import { WebSocket, WebSocketServer } from 'ws';

export interface LabelInput {
  uri: string;
  val: string;
  neg?: boolean;
  cid?: string;
  /** When it was made (now when not given): a hostile labeler's may be any string. */
  cts?: string;
}

/**
 * A labeler someone else runs, as the network has them: a did:web (did:web:localhost%3A<port>) whose DID document
 * names its `#atproto_label` key and `#atproto_labeler` service, and com.atproto.label.subscribeLabels over a
 * WebSocket, each label signed with that key (DAG-CBOR of the label without `sig`). Every label it ever wrote is
 * kept with its seq and replayed to a subscriber from its cursor; it remembers what cursors it was asked for.
 */
export async function startLabeler() {
  const key = await Secp256k1Keypair.create();
  const frames: { seq: number; bytes: Uint8Array }[] = [];
  const cursors: (string | null)[] = [];
  const sockets = new Set<WebSocket>();
  let did = '';
  let base = '';
  const server = http.createServer((req, res) => {
    if (req.url === '/.well-known/did.json') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(labelerDocument(did, key, base)));
      return;
    }
    res.statusCode = 404;
    res.end();
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/xrpc/com.atproto.label.subscribeLabels') return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => {
      const cursor = url.searchParams.get('cursor');
      cursors.push(cursor);
      sockets.add(ws);
      ws.on('close', () => sockets.delete(ws));
      for (const f of frames) if (cursor === null || f.seq > Number(cursor)) ws.send(f.bytes);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  base = `http://localhost:${port}`;
  did = `did:web:localhost%3A${port}`;

  const send = (seq: number, bytes: Uint8Array) => {
    frames.push({ seq, bytes });
    for (const ws of sockets) if (ws.readyState === WebSocket.OPEN) ws.send(bytes);
    return seq;
  };
  const sign = async (input: LabelInput, signer = key) => {
    const unsigned = {
      ver: 1,
      src: did,
      uri: input.uri,
      ...(input.cid ? { cid: input.cid } : {}),
      val: input.val,
      ...(input.neg ? { neg: true } : {}),
      cts: input.cts ?? new Date().toISOString(),
    };
    return { ...unsigned, sig: await signer.sign(cborEncode(unsigned)) };
  };
  const frame = (seq: number, labels: unknown[]) =>
    new MessageFrame({ seq, labels } as never, { type: '#labels' }).toBytes();

  return {
    get did() {
      return did;
    },
    /** The cursor each subscription asked for (null: none), in order. */
    cursors,
    /** Writes one label, signed by the labeler's key, as a new frame; returns its seq. */
    async label(input: LabelInput) {
      const seq = frames.length + 1;
      return send(seq, frame(seq, [await sign(input)]));
    },
    /** A frame whose label is signed by some other key: what a forger would send. */
    async forged(input: LabelInput) {
      const seq = frames.length + 1;
      return send(seq, frame(seq, [await sign(input, await Secp256k1Keypair.create())]));
    },
    /** Ends every open subscription (the follower must reconnect from its cursor). */
    drop() {
      for (const ws of sockets) ws.terminate();
    },
    async close() {
      for (const ws of sockets) ws.terminate();
      wss.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A labeler's DID document: its label key and its service. */
function labelerDocument(did: string, key: Secp256k1Keypair, service: string) {
  return {
    '@context': ['https://www.w3.org/ns/did/v1'],
    id: did,
    alsoKnownAs: [],
    verificationMethod: [
      {
        id: `${did}#atproto_label`,
        type: 'Multikey',
        controller: did,
        publicKeyMultibase: key.did().slice(8),
      },
    ],
    service: [{ id: '#atproto_labeler', type: 'AtprotoLabeler', serviceEndpoint: service }],
  };
}
