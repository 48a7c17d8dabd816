import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createOutbound } from '../../src/outbound/index.ts';
import { MCP_REQUESTS, mcpTools } from '../../src/tools/mcp.ts';

// An MCP Server that never finishes connecting and answers everything the client sends with a batch of its own
// requests (pings), each of which the client answers with a POST of its own, whose answer is another batch: a
// real HTTP server speaking the protocol's wire, as an attacker would run it.
let server: http.Server;
let url: string;
const seen = { requests: 0, open: 0, maxOpen: 0 };
/** Pings in each batch the server answers with (a drip of one keeps a client busy without passing its at-once bound). */
let pings = 40;

beforeAll(async () => {
  let id = 0;
  server = http.createServer((req, res) => {
    seen.requests++;
    seen.open++;
    seen.maxOpen = Math.max(seen.maxOpen, seen.open);
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      setTimeout(
        () => {
          seen.open--;
          if (req.method !== 'POST') return res.writeHead(405).end();
          const message = (() => {
            try {
              return JSON.parse(body) as { id?: unknown; method?: string };
            } catch {
              return {};
            }
          })();
          // A notification needs no answer; anything else (a request, or the client's reply to a ping) gets pings.
          if (message.method && message.id === undefined) return res.writeHead(202).end();
          const batch = Array.from({ length: pings }, () => ({ jsonrpc: '2.0', id: ++id, method: 'ping' }));
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(batch));
        },
        pings === 1 ? 40 : 5,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function connect() {
  Object.assign(seen, { requests: 0, open: 0, maxOpen: 0 });
  const outbound = createOutbound({ allowPrivate: true });
  const out = await mcpTools(
    { id: 'x', name: 'Pinger', url, headers: {} },
    { outbound, timeoutMs: 600, callTimeoutMs: 1_000 },
  );
  expect(out).toEqual({ unreachable: 'Pinger (did not answer in time)' });
}

/** Whether the client still sends anything once the turn has given up on the server. */
async function stillSending() {
  await settle(200);
  const after = seen.requests;
  await settle(800);
  return seen.requests > after;
}

it('a server that answers with batches of requests of its own gets at most a few replies at once', async () => {
  pings = 40;
  await connect();
  // Its pings were answered (the path is the one attacked)…
  expect(seen.requests).toBeGreaterThan(2);
  // …within the client's leash.
  expect(seen.requests).toBeLessThanOrEqual(MCP_REQUESTS.total);
  expect(seen.maxOpen).toBeLessThanOrEqual(MCP_REQUESTS.atOnce);
  expect(await stillSending()).toBe(false);
});

it('a server that keeps a client busy one ping at a time hears nothing more once the turn gives up on it', async () => {
  pings = 1;
  await connect();
  expect(seen.requests).toBeGreaterThan(2);
  expect(await stillSending()).toBe(false);
  expect(seen.open).toBe(0);
});
