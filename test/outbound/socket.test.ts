import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { createOutbound, FollowedSocket, type SocketPolicy } from '../../src/outbound/index.ts';
import { until } from '../support/until.ts';

const servers: WebSocketServer[] = [];
const followers: FollowedSocket[] = [];
afterEach(async () => {
  await Promise.all(followers.splice(0).map((f) => f.stop()));
  for (const s of servers.splice(0)) s.close();
});

/** A stream on loopback that sends `messages` to each connection and counts the connections. */
async function stream(messages: string[]) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  servers.push(wss);
  await new Promise((r) => wss.once('listening', r));
  const seen = { connections: 0 };
  wss.on('connection', (ws) => {
    seen.connections++;
    for (const m of messages) ws.send(m);
  });
  return { port: (wss.address() as AddressInfo).port, seen };
}

function follow(
  address: () => Promise<URL>,
  policy: SocketPolicy | undefined,
  onTakeError: 'continue' | 'reconnect' = 'continue',
) {
  const taken: string[] = [];
  const logged: string[] = [];
  const socket = new FollowedSocket({
    address,
    take: async (data) => {
      const text = data.toString();
      if (text === 'bad') throw new Error('bad message');
      taken.push(text);
    },
    maxPayload: 1024,
    highWater: 2,
    lowWater: 1,
    backoff: { firstMs: 20, maxMs: 50 },
    onTakeError,
    log: (m, e) => logged.push(`${m}: ${(e as Error | undefined)?.message ?? ''}`),
    policy,
  });
  followers.push(socket);
  socket.start();
  return { taken, logged };
}

// A host that resolves to loopback, which the policy (narrowed for the test) says is not public.
const resolve = async () => [{ address: '127.0.0.1', family: 4 }];
const strict = createOutbound({ allowPrivate: false, resolve, isPublic: (a) => a !== '127.0.0.1' });

it('takes every message in order, through the back-pressure, when the policy lets it connect', async () => {
  const { port } = await stream(['1', '2', '3', '4', '5']);
  // Every address public: the host is found by the policy's own lookup (the system's knows no labeler.example).
  const open = createOutbound({ allowPrivate: false, resolve, isPublic: () => true });
  const { taken } = follow(async () => new URL(`ws://labeler.example:${port}/`), open.socket);
  await until('five messages', async () => taken.length === 5);
  expect(taken).toEqual(['1', '2', '3', '4', '5']);
});

it('a host a DID document names that resolves to a private address is never connected to', async () => {
  const { port, seen } = await stream(['hello']);
  const { logged } = follow(async () => new URL(`ws://labeler.example:${port}/`), strict.socket);
  await until('a refusal logged twice (it tries again later)', async () => logged.length >= 2);
  expect(logged[0]).toMatch(/not a public address/);
  expect(seen.connections).toBe(0);
});

it('an address given as a private IP literal, or not a socket URL, is refused before any connection', async () => {
  const { port, seen } = await stream(['hello']);
  const literal = follow(async () => new URL(`ws://127.0.0.1:${port}/`), strict.socket);
  const http = follow(async () => new URL(`http://labeler.example:${port}/`), strict.socket);
  await until('both refused', async () => literal.logged.length > 0 && http.logged.length > 0);
  expect(literal.logged[0]).toMatch(/127\.0\.0\.1 is not a public address/);
  expect(http.logged[0]).toMatch(/only ws and wss/);
  expect(seen.connections).toBe(0);
});

it('a message that fails: `continue` goes on with the next; `reconnect` drops the rest and connects again', async () => {
  const a = await stream(['1', 'bad', '2']);
  const going = follow(async () => new URL(`ws://127.0.0.1:${a.port}/`), undefined, 'continue');
  await until('the message after the bad one', async () => going.taken.includes('2'));
  expect(going.taken).toEqual(['1', '2']);
  expect(a.seen.connections).toBe(1);

  const b = await stream(['1', 'bad', '2']);
  const again = follow(async () => new URL(`ws://127.0.0.1:${b.port}/`), undefined, 'reconnect');
  await until('a second connection', async () => b.seen.connections >= 2);
  // '2' came behind the failed one on the first connection and was not taken there.
  expect(again.taken.slice(0, 2)).toEqual(['1', '1']);
  expect(again.logged.some((l) => /reconnecting/.test(l))).toBe(true);
});
