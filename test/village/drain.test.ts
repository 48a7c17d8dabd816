import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { drainingFetch } from '../../src/village/drain.ts';

// A stream of 2,000 SSE events, then the connection cut (no end of the chunked body), as a Provider's socket
// breaks mid-reply.
const EVENTS = 2000;
let server: http.Server;
let url: string;
beforeAll(async () => {
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (let i = 0; i < EVENTS - 1; i++) res.write(`data: {"i":${i}}\n\n`);
    // Once the last event has left for the client, the connection goes without the body's end.
    res.write(`data: {"i":${EVENTS - 1}}\n\n`, () => res.socket?.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise((r) => server.close(r)));

/** Reads slowly, as a busy turn does, counting whole events; reports how the body ended. */
async function readSlowly(f: typeof fetch): Promise<{ events: number; error: unknown }> {
  const res = await f(url);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let error: unknown;
  // Let the whole stream arrive (and the cut happen) before reading anything.
  await new Promise((r) => setTimeout(r, 300));
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      await new Promise((r) => setTimeout(r, 1));
    }
  } catch (e) {
    error = e;
  }
  return { events: text.split('\n\n').filter((e) => e.startsWith('data: ')).length, error };
}

it('a cut connection: plain fetch drops what it had received; the draining fetch delivers all of it, then the error', async () => {
  const plain = await readSlowly(fetch);
  // The fault is real here: the cut fired, and the received tail was thrown away with it.
  expect(plain.error).toBeDefined();
  expect(plain.events).toBeLessThan(EVENTS);

  const drained = await readSlowly(drainingFetch());
  expect(drained.events).toBe(EVENTS);
  expect(drained.error).toBeDefined();
});
