import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, expect, it, vi } from 'vitest';
import { SseWriter } from '../../src/http/index.ts';

type Delta = { text: string };
const join = (a: Delta, b: Delta): Delta | undefined => ({ text: a.text + b.text });
let server: http.Server | undefined;
afterEach(async () => {
  vi.useRealTimers();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

/** A real HTTP server whose one route hands its SseWriter to the test. */
async function serve(
  stalledMs?: number,
): Promise<{ url: string; writer: Promise<SseWriter<Delta>>; closed: Promise<void> }> {
  let give!: (w: SseWriter<Delta>) => void;
  const writer = new Promise<SseWriter<Delta>>((r) => {
    give = r;
  });
  let closedNow!: () => void;
  const closed = new Promise<void>((r) => {
    closedNow = r;
  });
  const app = express();
  app.get('/', (_req, res) => {
    res.on('close', () => closedNow());
    const sse = new SseWriter<Delta>(res, join, stalledMs);
    sse.open();
    give(sse);
  });
  server = http.createServer(app);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, writer, closed };
}

/** Counts the writes that reach a response's socket handle (one system call each; chunked encoding's pieces
 * are corked into one). */
function countWrites(res: http.ServerResponse): () => number {
  let count = 0;
  const socket = res.socket! as unknown as Record<'_write' | '_writev', (...a: unknown[]) => void>;
  for (const name of ['_write', '_writev'] as const) {
    const original = socket[name].bind(socket);
    socket[name] = (...a: unknown[]) => {
      count++;
      original(...a);
    };
  }
  return () => count;
}

it('writes a lone frame at once, waiting on no timer', async () => {
  // Timers frozen: a frame held for a coalescing window would never arrive.
  vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval'] });
  const { url, writer } = await serve();
  const res = await fetch(url);
  const reader = res.body!.getReader();
  (await writer).send({ text: 'hi' });
  const { value } = await reader.read();
  expect(new TextDecoder().decode(value)).toBe('data: {"text":"hi"}\n\n');
  await reader.cancel();
});

it('sends the headers with a first frame sent at once, in one write; alone when no frame comes', async () => {
  const writes: number[] = [];
  const app = express();
  app.get('/:send', (req, res) => {
    const count = countWrites(res);
    const sse = new SseWriter<Delta>(res, join);
    sse.open();
    if (req.params.send === 'yes') {
      sse.send({ text: 'start' });
      setImmediate(() => writes.push(count()));
    }
  });
  server = http.createServer(app);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const withFrame = await fetch(`${url}/yes`);
  const reader = withFrame.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: {"text":"start"}\n\n');
  await reader.cancel();
  // No frame: the 200 and its headers still arrive (fetch resolves on them), on their own.
  const bare = await fetch(`${url}/no`);
  expect(bare.headers.get('content-type')).toContain('text/event-stream');
  await bare.body!.cancel();
  expect(writes).toEqual([1]);
});

it('frames sent in one chain of microtasks go out merged, in one write, when the chain ends', async () => {
  const counts: number[] = [];
  const app = express();
  app.get('/', (_req, res) => {
    const count = countWrites(res);
    const sse = new SseWriter<Delta>(res, join);
    sse.open();
    // The deltas of one Provider chunk, each a microtask after the last, as a stream's reader hands them on
    // (the first too: a stream's parts reach the turn in promise jobs, not in the socket's callback itself).
    void (async () => {
      await Promise.resolve();
      for (const text of ['a', 'b', 'c', 'd']) {
        sse.send({ text });
        await Promise.resolve();
      }
      setImmediate(() => counts.push(count()));
    })();
  });
  server = http.createServer(app);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  const reader = res.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: {"text":"abcd"}\n\n');
  await reader.cancel();
  expect(counts).toEqual([1]);
});

const FRAMES = 200_000;
it('under backpressure merges what queues, loses nothing, and ends with it', async () => {
  const { url, writer } = await serve();
  // A reader that does not read: the server's socket backs up.
  const reply = await new Promise<http.IncomingMessage>((resolve) => {
    http.get(url, (res) => {
      res.pause();
      resolve(res);
    });
  });
  const sse = await writer;
  const sent: string[] = [];
  for (let i = 0; i < FRAMES; i++) {
    const text = `${i} `.padEnd(200, '.');
    sent.push(text);
    sse.send({ text });
    // A new event-loop turn every 100 frames: with no backpressure that is one write each.
    if (i % 100 === 99) await new Promise((r) => setImmediate(r));
  }
  sse.end();
  let raw = '';
  reply.on('data', (d) => {
    raw += d;
  });
  reply.resume();
  await new Promise((r) => reply.once('end', r));
  const events = raw.split('\n').filter((l) => l.startsWith('data: '));
  const received = events.map((l) => (JSON.parse(l.slice(6)) as Delta).text).join('');
  expect(received).toBe(sent.join(''));
  // 40 MB cannot all sit in socket buffers: once the socket backed up, what queued went out merged, so far
  // fewer writes than the 2,000 turns that sent frames.
  expect(events.length).toBeLessThan(FRAMES / 100 / 2);
});

it('closes the connection of a reader that stops reading, instead of holding it and its data forever', async () => {
  const { url, writer, closed } = await serve(300);
  const reply = await new Promise<http.IncomingMessage>((resolve) => {
    http.get(url, (res) => {
      res.pause();
      resolve(res);
    });
  });
  const sse = await writer;
  let gone = false;
  void closed.then(() => {
    gone = true;
  });
  // Far more than socket buffers hold, so the writer waits on a drain that never comes.
  for (let i = 0; i < 2_000; i++) {
    sse.send({ text: `${i}`.padEnd(20_000, '.') });
    if (i % 50 === 49) await new Promise((r) => setImmediate(r));
  }
  await closed;
  expect(gone).toBe(true);
  reply.destroy();
});
