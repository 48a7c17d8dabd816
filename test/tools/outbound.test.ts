import crypto from 'node:crypto';
import dgram from 'node:dgram';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutbound, isPublicAddress } from '../../src/outbound/index.ts';
import { makeSystemResolve } from '../../src/outbound/policy.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

/** A loopback server that counts every request it receives and answers like an internal page would. */
async function internalServer(
  host = '127.0.0.1',
  answer?: (req: http.IncomingMessage, res: http.ServerResponse) => void,
) {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    if (answer) return answer(req, res);
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end('internal error: secret=hunter2 token=abc');
  });
  // Connections, not only requests: a TLS hello to this plain-HTTP server is a connection all the same.
  const connections = { count: 0 };
  server.on('connection', () => {
    connections.count++;
  });
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    seen,
    connections,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255));
/** Addresses in every range that is not the public internet, as [a, b, c, d]. */
const privateV4 = fc.oneof(
  v4.map(([, b, c, d]) => [127, b, c, d]),
  v4.map(([, b, c, d]) => [10, b, c, d]),
  v4.map(([, b, c, d]) => [172, 16 + (b % 16), c, d]),
  v4.map(([, , c, d]) => [192, 168, c, d]),
  v4.map(([, , c, d]) => [169, 254, c, d]),
  v4.map(([, b, c, d]) => [100, 64 + (b % 64), c, d]),
  v4.map(([, b, c, d]) => [198, 18 + (b % 2), c, d]),
  v4.map(([, b, c, d]) => [0, b, c, d]),
  v4.map(([a, b, c, d]) => [224 + (a % 32), b, c, d]),
);
const hex = (n: number) => n.toString(16);
/** Every way to write an IPv4 address as IPv6 that still reaches it (or its operator's NAT). */
const embeddings = ([a, b, c, d]: number[]) => {
  const hi = hex((a! << 8) | b!);
  const lo = hex((c! << 8) | d!);
  return [
    `::ffff:${a}.${b}.${c}.${d}`,
    `::ffff:${hi}:${lo}`,
    `::${a}.${b}.${c}.${d}`,
    `::${hi}:${lo}`,
    `64:ff9b::${hi}:${lo}`,
    `64:ff9b:1::${hi}:${lo}`,
    `2002:${hi}:${lo}::1`,
  ];
};

describe('the address policy', () => {
  it('refuses every non-public IPv4 address and every IPv6 spelling of it', () => {
    fc.assert(
      fc.property(privateV4, (ip) => {
        expect(isPublicAddress(ip.join('.'))).toBe(false);
        for (const v6 of embeddings(ip)) expect(isPublicAddress(v6), v6).toBe(false);
      }),
      { numRuns: 500 },
    );
    for (const a of [
      '::1',
      '::',
      'fe80::1',
      'fe90::1',
      'fc00::1',
      'fd12::1',
      'ff02::1',
      '2001::1',
      '2001:db8::1',
    ])
      expect(isPublicAddress(a), a).toBe(false);
    // The control: public addresses pass.
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) expect(isPublicAddress(a), a).toBe(true);
  });

  it('refuses decimal, octal, hex, mapped and named spellings of loopback, and a redirect to a private address', async () => {
    const target = await internalServer('127.0.0.2');
    // 127.0.0.1 plays a public host here, so a redirect away from it can be followed up to the check.
    const front = await internalServer('127.0.0.1', (req, res) => {
      res.writeHead(302, {
        location:
          req.url === '/by-name'
            ? `http://inside.example.org:${target.port}/`
            : `http://127.0.0.2:${target.port}/`,
      });
      res.end();
    });
    const resolve = async (host: string) =>
      host === 'inside.example.org'
        ? [{ address: '127.0.0.2', family: 4 }]
        : [{ address: '127.0.0.1', family: 4 }];
    try {
      const strict = createOutbound({
        allowPrivate: false,
        resolve: async () => [{ address: '127.0.0.2', family: 4 }],
      });
      const p = target.port;
      for (const url of [
        `http://127.0.0.2:${p}/`,
        `http://2130706434:${p}/`,
        `http://0x7f.0.0.2:${p}/`,
        `http://0177.0.0.2:${p}/`,
        `http://[::ffff:127.0.0.2]:${p}/`,
        `http://[::127.0.0.2]:${p}/`,
        `http://0.0.0.0:${p}/`,
        `http://localhost.:${p}/`,
        `http://anything.example.org:${p}/`,
      ]) {
        await expect(strict.fetch()(url), url).rejects.toThrow();
        await expect(strict.check(url), url).rejects.toThrow();
      }
      const frontOnly = createOutbound({ allowPrivate: false, resolve, isPublic: (a) => a === '127.0.0.1' });
      await expect(frontOnly.fetch()(`http://127.0.0.1:${front.port}/`)).rejects.toThrow();
      await expect(frontOnly.fetch()(`http://127.0.0.1:${front.port}/by-name`)).rejects.toThrow();
      // The redirects were sent (the fault happened), and what they pointed at was never reached.
      expect(front.seen).toEqual(['/', '/by-name']);
      expect(target.seen).toEqual([]);
      // The control: the opt-in reaches it.
      expect((await createOutbound({ allowPrivate: true }).fetch()(`http://127.0.0.2:${p}/`)).status).toBe(
        500,
      );
      expect(target.seen).toHaveLength(1);
    } finally {
      await target.close();
      await front.close();
    }
  });

  it('connects to the address it checked: a DNS answer that changes after the check cannot switch it', async () => {
    const inside = await internalServer();
    let calls = 0;
    // The first answer (the check) is public; every later one (the connection) is loopback.
    const outbound = createOutbound({
      allowPrivate: false,
      resolve: async () =>
        calls++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }],
    });
    try {
      const url = `http://rebinding.example.org:${inside.port}/`;
      await expect(outbound.check(url)).resolves.toBeInstanceOf(URL);
      await expect(outbound.fetch()(url)).rejects.toThrow();
      expect(calls).toBe(2);
      expect(inside.seen).toEqual([]);
    } finally {
      await inside.close();
    }
  });

  it('bounds what a response may hold, declared or streamed', async () => {
    const big = await internalServer('127.0.0.1', (req, res) => {
      if (req.url === '/declared') return res.end('x'.repeat(200_000));
      // Chunked, no length declared: counted as it streams.
      for (let i = 0; i < 20; i++) res.write('y'.repeat(10_000));
      res.end();
    });
    try {
      const read = (maxBytes: number, path: string) =>
        createOutbound({ allowPrivate: true })
          .fetch({ maxBytes })(`http://127.0.0.1:${big.port}${path}`)
          .then((r) => r.text());
      await expect(read(100_000, '/declared')).rejects.toThrow(/too large/i);
      await expect(read(100_000, '/streamed')).rejects.toThrow(/too large/i);
      // The control: within the limit both read whole.
      expect(await read(300_000, '/declared')).toHaveLength(200_000);
      expect(await read(300_000, '/streamed')).toHaveLength(200_000);
    } finally {
      await big.close();
    }
  });
});

describe('MCP Servers through the policy', () => {
  let strict: TestApp;
  let inside: Awaited<ReturnType<typeof internalServer>>;
  let resolveCalls = 0;
  beforeAll(async () => {
    inside = await internalServer();
    strict = await startTestApp(
      { allowPrivateToolUrls: false },
      {},
      {
        // evil.example.org always resolves to loopback; rebind.example.org only after its first answer.
        resolve: async (host) => {
          if (host === 'rebind.example.org' && resolveCalls++ === 0)
            return [{ address: '93.184.216.34', family: 4 }];
          return [{ address: '127.0.0.1', family: 4 }];
        },
      },
    );
  }, 60_000);
  afterAll(async () => {
    await strict?.close();
    await inside?.close();
  });

  it('refuses every bypass when saved and at turn time, and the internal server hears nothing', async () => {
    const { cookie, playerId } = await strict.signIn();
    const p = inside.port;
    const bypasses = [
      `http://[::ffff:127.0.0.1]:${p}/mcp`,
      `http://[::ffff:169.254.169.254]:${p}/mcp`,
      `http://[::ffff:10.0.0.1]:${p}/mcp`,
      `http://[::127.0.0.1]:${p}/mcp`,
      `http://[fe90::1]:${p}/mcp`,
      `http://[64:ff9b::7f00:1]:${p}/mcp`,
      `http://198.18.0.1:${p}/mcp`,
      `http://2130706433:${p}/mcp`,
      `http://0177.0.0.1:${p}/mcp`,
      `http://0x7f000001:${p}/mcp`,
      `http://0.0.0.0:${p}/mcp`,
      `http://localhost.:${p}/mcp`,
      `http://evil.example.org:${p}/mcp`,
    ];
    for (const url of bypasses) {
      const res = await strict.api('/api/mcp-servers', { cookie, body: { name: 'Inside', url } });
      expect(res.status, url).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('URL_NOT_ALLOWED');
    }
    // Rebinding: the name is public when saved…
    const saved = await strict.api('/api/mcp-servers', {
      cookie,
      body: {
        name: 'Rebind',
        url: `http://rebind.example.org:${p}/mcp`,
        headers: { 'metadata-flavor': 'Google' },
      },
    });
    expect(saved.status).toBe(201);

    // …and at turn time every one of them (written straight to the table, as if saved before) is refused.
    for (const url of bypasses) {
      await strict.db.sql`insert into mcp_servers (player_id, name, url, headers)
        values (${playerId}, ${`srv${bypasses.indexOf(url)}`}, ${url}, '{}')`;
    }
    const servers = await strict.db.sql`select id from mcp_servers where player_id = ${playerId}`;
    const { conversationId, npcIds } = await setupConversation(strict, cookie);
    const grants = servers.map((s) => ({ kind: 'mcp', mcpServerId: s.id }));
    expect(
      (await strict.api(`/api/npcs/${npcIds[0]}/grants`, { method: 'PUT', cookie, body: { grants } })).status,
    ).toBe(200);
    strict.fake.enqueue((r: Reply) => {
      r.text('ok');
      r.finish();
    });
    await collectFrames(
      await strict.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'hi' } }),
    );
    expect(inside.seen).toEqual([]);
    expect(inside.connections.count).toBe(0);
    expect(resolveCalls).toBeGreaterThan(1); // the rebinding answer was asked for at turn time
    const system = strict.fake.requests.filter((r) => r.body.stream).at(-1)!.body.messages[0]!
      .content as string;
    expect(system).toContain('Rebind (is not at an address this server may reach)');
    expect((system.match(/is not at an address this server may reach/g) ?? []).length).toBe(servers.length);
  }, 60_000);
});

describe('what a failing server said never reaches a prompt', () => {
  let open: TestApp;
  beforeAll(async () => {
    open = await startTestApp({ allowPrivateToolUrls: true });
  }, 60_000);
  afterAll(() => open?.close());

  it('an internal page that is not an MCP server becomes a short reason of ours', async () => {
    const inside = await internalServer();
    try {
      const { cookie } = await open.signIn();
      const saved = await open.api('/api/mcp-servers', {
        cookie,
        body: { name: 'Internal', url: `http://127.0.0.1:${inside.port}/mcp` },
      });
      const { server } = (await saved.json()) as { server: { id: string } };
      const { conversationId, npcIds } = await setupConversation(open, cookie);
      await open.api(`/api/npcs/${npcIds[0]}/grants`, {
        method: 'PUT',
        cookie,
        body: { grants: [{ kind: 'mcp', mcpServerId: server.id }] },
      });
      open.fake.enqueue((r: Reply) => {
        r.text('ok');
        r.finish();
      });
      await collectFrames(
        await open.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'hi' } }),
      );
      // The fault happened: the page was asked and answered with its secret.
      expect(inside.seen.length).toBeGreaterThan(0);
      const request = JSON.stringify(open.fake.requests.filter((r) => r.body.stream).at(-1)!.body);
      expect(request).toContain('Internal (answered HTTP 500)');
      expect(request).not.toContain('hunter2');
    } finally {
      await inside.close();
    }
  }, 60_000);
});

describe('the ATProto network through the policy', () => {
  it('a sign-in identifier that is a private URL, or a handle that resolves to one, is never fetched', async () => {
    const inside = await internalServer();
    const app = await startTestApp(
      {},
      {},
      // Every name resolves to the loopback server: a DNS answer an attacker controls.
      { resolve: async () => [{ address: '127.0.0.1', family: 4 }] },
    );
    try {
      for (const identifier of [
        `http://127.0.0.1:${inside.port}`,
        `https://[::ffff:127.0.0.1]:${inside.port}`,
        `https://pds.example.org:${inside.port}`,
        'someone.example.org',
      ]) {
        const res = await app.api('/api/auth/login', { body: { identifier } });
        expect(res.status, identifier).toBeGreaterThanOrEqual(400);
      }
      expect(inside.connections.count).toBe(0);
    } finally {
      await app.close();
      await inside.close();
    }
  }, 60_000);
});

describe('names whose DNS servers never answer', () => {
  it('are given up on, in their own time, without holding the threads file reads and hashes run on', async () => {
    // A DNS server that hears every query and answers none.
    const silent = dgram.createSocket('udp4');
    let queries = 0;
    silent.on('message', () => {
      queries++;
    });
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', r));
    const resolve = makeSystemResolve([`127.0.0.1:${silent.address().port}`]);
    try {
      // Far more lookups than libuv has threads (4): with getaddrinfo, each would hold one.
      const lookups = Array.from({ length: 16 }, (_, i) =>
        resolve(`n${i}.slow.example`).then(
          () => 'resolved',
          (e: NodeJS.ErrnoException) => e.code,
        ),
      );
      let settled = 0;
      for (const l of lookups) void l.then(() => settled++);
      // Work that needs those threads finishes while every lookup is still waiting.
      await Promise.all(
        Array.from({ length: 8 }, () => promisify(crypto.pbkdf2)('pw', 'salt', 1000, 32, 'sha256')),
      );
      await readFile(import.meta.filename);
      expect(settled).toBe(0);
      expect(queries).toBeGreaterThan(0);
      // And every lookup ends, as a time-out.
      expect(new Set(await Promise.all(lookups))).toEqual(new Set(['ETIMEDOUT']));
      // localhost is answered without asking anyone (and refused by the policy, as before).
      expect((await resolve('LocalHost.')).map((a) => a.address)).toEqual(['127.0.0.1', '::1']);
    } finally {
      silent.close();
    }
  }, 60_000);
});
