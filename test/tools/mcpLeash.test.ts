import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createOutbound } from '../../src/outbound/index.ts';
import { MCP_TOOLS, mcpTools } from '../../src/tools/mcp.ts';
import { LeashEndedError, leashed, MCP_REQUESTS } from '../../src/tools/mcpLeash.ts';
import { until } from '../support/until.ts';

// An MCP Server that never finishes connecting and answers everything the client sends with a batch of its own
// requests (pings), each of which the client answers with a POST of its own, whose answer is another batch: a
// real HTTP server speaking the protocol's wire, as an attacker would run it.
let server: http.Server;
let url: string;
const seen = { requests: 0, open: 0, maxOpen: 0 };
/** Pings in each batch the server answers with (a drip of one keeps a client busy without passing its at-once bound). */
let pings = 40;
/** Whether answers come as event streams left open. */
let streams = false;

beforeAll(async () => {
  let id = 0;
  server = http.createServer((req, res) => {
    seen.requests++;
    seen.open++;
    seen.maxOpen = Math.max(seen.maxOpen, seen.open);
    // Open until the answer is done with (a stream stays open until the client lets it go).
    res.on('close', () => seen.open--);
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      setTimeout(
        () => {
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
          if (!streams)
            return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(batch));
          // As a stream that sends its pings and stays open.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          for (const ping of batch) res.write(`event: message\ndata: ${JSON.stringify(ping)}\n\n`);
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
  Object.assign(seen, { requests: 0, maxOpen: seen.open });
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

it('a server that answers with streams it leaves open holds no more of them at once than the client may', async () => {
  pings = 3;
  streams = true;
  try {
    await connect();
    // As many as it may have open, each stream holding its place: the rest waited, and were cut off with the turn.
    expect(seen.requests).toBeGreaterThanOrEqual(MCP_REQUESTS.atOnce);
    expect(seen.maxOpen).toBeLessThanOrEqual(MCP_REQUESTS.atOnce);
    expect(await stillSending()).toBe(false);
    // Closed within an exchange's time limit (the call's and the connect's: 1.6 s from each request).
    await settle(800);
    expect(seen.open).toBe(0);
  } finally {
    streams = false;
  }
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
  let lists = 0;
  let pageSize = 30;
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
        params?: { protocolVersion?: string; cursor?: string };
      };
      if (m.method === 'tools/list') lists++;
      const from = Number(m.params?.cursor ?? 0);
      if (m.id === undefined) return res.writeHead(202).end();
      const result =
        m.method === 'initialize'
          ? {
              protocolVersion: m.params?.protocolVersion,
              capabilities: { tools: {} },
              serverInfo: { name: 'L', version: '1' },
            }
          : m.method === 'tools/list'
            ? {
                tools: listed.slice(from, from + pageSize),
                ...(from + pageSize < listed.length ? { nextCursor: String(from + pageSize) } : {}),
              }
            : undefined;
      const answer = result
        ? { jsonrpc: '2.0', id: m.id, result }
        : { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => lister.listen(0, '127.0.0.1', resolve));
  const listerTools = async () => {
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
    return out;
  };
  try {
    const out = await listerTools();
    const names = Object.keys(out.tools);
    expect(names).toHaveLength(MCP_TOOLS.perServer);
    for (const n of names) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(names[0]).toBe('lister__search_web');
    expect(out.descriptions.lister__search_web).toBe('Searches');
    expect(names).not.toContain('lister__too_deep');
    await out.close();
    // Read page after page only until there are enough (90 definitions of 103 in three pages of 30)…
    expect(lists).toBe(3);
    // …and at most MCP_TOOLS.pages pages, however many the server has.
    lists = 0;
    pageSize = 5;
    const paged = await listerTools();
    expect(lists).toBe(MCP_TOOLS.pages);
    expect(Object.keys(paged.tools)).toHaveLength(MCP_TOOLS.pages * 5 - 2);
    await paged.close();
  } finally {
    lister.closeAllConnections();
    await new Promise((resolve) => lister.close(resolve));
  }
});

it('a request waiting for its place never goes out once the leash ends, and an answer with no body holds none', async () => {
  const heard: string[] = [];
  const hanging: http.ServerResponse[] = [];
  const quiet = http.createServer((req, res) => {
    heard.push(req.url ?? '');
    if (req.url === '/accepted') res.writeHead(202).end();
    else hanging.push(res);
  });
  await new Promise<void>((resolve) => quiet.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(quiet.address() as AddressInfo).port}`;
  try {
    const leash = leashed(createOutbound({ allowPrivate: true }).fetch({ timeoutMs: 20_000 }), 20_000);
    // Answers with no body to read free their places at once: more of them than there are places all complete.
    for (let i = 0; i < MCP_REQUESTS.atOnce + 2; i++)
      expect((await leash.fetch(`${base}/accepted`, { method: 'POST' })).status).toBe(202);
    // Every place taken by a request left unanswered; one more waits for a place.
    const open = Array.from({ length: MCP_REQUESTS.atOnce }, () =>
      leash.fetch(`${base}/hang`, { method: 'POST' }).catch((e: unknown) => e),
    );
    await until(
      'every place taken',
      async () => heard.filter((u) => u === '/hang').length === MCP_REQUESTS.atOnce,
    );
    const waiting = leash.fetch(`${base}/late`, { method: 'POST' }).catch((e: unknown) => e);
    leash.end();
    expect(await waiting).toBeInstanceOf(LeashEndedError);
    for (const e of await Promise.all(open)) expect(e).toBeInstanceOf(Error);
    await settle(300);
    expect(heard).not.toContain('/late');
  } finally {
    for (const res of hanging) res.destroy();
    quiet.closeAllConnections();
    await new Promise((resolve) => quiet.close(resolve));
  }
});
