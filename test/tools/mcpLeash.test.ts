import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createOutbound } from '../../src/outbound/index.ts';
import { MCP_REQUESTS, MCP_TOOLS, mcpTools } from '../../src/tools/mcp.ts';

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

it('a server’s tools are taken bounded: names Providers accept, the first of two alike, schemas within bounds', async () => {
  const deep: Record<string, unknown> = { type: 'object', properties: {} };
  let at = deep;
  for (let i = 0; i < 200; i++) {
    const next = { type: 'object', properties: {} };
    at.properties = { x: next };
    at = next;
  }
  const listed = [
    { name: 'search.web', description: 'Searches', inputSchema: { type: 'object', properties: {} } },
    { name: 'search_web', description: 'The other', inputSchema: { type: 'object', properties: {} } },
    { name: 'too deep', inputSchema: deep },
    ...Array.from({ length: 100 }, (_, i) => ({
      name: `t${i}`,
      inputSchema: { type: 'object', properties: {} },
    })),
  ];
  const lister = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      const m = JSON.parse(body || '{}') as {
        id?: number;
        method?: string;
        params?: { protocolVersion?: string };
      };
      if (m.id === undefined) return res.writeHead(202).end();
      const result =
        m.method === 'initialize'
          ? {
              protocolVersion: m.params?.protocolVersion,
              capabilities: { tools: {} },
              serverInfo: { name: 'L', version: '1' },
            }
          : m.method === 'tools/list'
            ? { tools: listed }
            : undefined;
      const answer = result
        ? { jsonrpc: '2.0', id: m.id, result }
        : { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => lister.listen(0, '127.0.0.1', resolve));
  try {
    const out = await mcpTools(
      {
        id: 'y',
        name: 'Lister',
        url: `http://127.0.0.1:${(lister.address() as AddressInfo).port}/mcp`,
        headers: {},
      },
      { outbound: createOutbound({ allowPrivate: true }), timeoutMs: 2_000, callTimeoutMs: 1_000 },
    );
    if (!('tools' in out)) throw new Error(`unreachable: ${out.unreachable}`);
    const names = Object.keys(out.tools);
    expect(names).toHaveLength(MCP_TOOLS.perServer);
    for (const n of names) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(names[0]).toBe('lister__search_web');
    expect(out.descriptions.lister__search_web).toBe('Searches');
    expect(names).not.toContain('lister__too_deep');
    await out.close();
  } finally {
    lister.closeAllConnections();
    await new Promise((resolve) => lister.close(resolve));
  }
});
