// One attacking Player as an OS process of its own (node --import tsx test/load/attacker.ts). It runs the attack
// named in ATTACK (JSON) until SIGTERM, then prints what it saw — answers by status, and evidence the attack
// reached what it aims at — as one JSON line and exits. Every attack is one the issue measured against the server.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Attack {
  kind: 'import-bomb' | 'card-bomb' | 'trickle' | 'exports' | 'heavy-read' | 'pages' | 'sandbox';
  /** The app's origin, e.g. http://127.0.0.1:1234. */
  url: string;
  cookie: string;
  /** Conversations of this Player to aim at (exports, reads, pages, sandbox commands). */
  conversationIds: string[];
  /** How many requests the attack keeps in flight. */
  concurrency: number;
}

const attack = JSON.parse(process.env.ATTACK ?? '{}') as Attack;
const counts: Record<string, number> = {};
let reached = false;
const count = (key: string) => {
  counts[key] = (counts[key] ?? 0) + 1;
  // The harness reads its reports once every attack has had its first answer (or a bound passed).
  if (!reached && key !== 'error') {
    reached = true;
    process.stdout.write('reached\n');
  }
};
let stopping = false;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const MB = 1024 * 1024;
/** Files go as bytes, as the web app sends them (a JSON body has a small limit of its own and is refused first). */
const FILE = 'application/octet-stream';
/** `{"format":…,"messages":[{},{},…]}` — 20 MB of empty objects: 6.9 million nodes. */
function importBomb(): Buffer {
  const head =
    '{"format":"agentsville.conversation","version":2,"conversation":{"title":"x"},"npcs":[],"messages":[';
  const n = Math.floor((20 * MB - head.length - 8) / 3);
  return Buffer.from(`${head}${'{},'.repeat(n)}{}]}`);
}
/** A character card whose lorebook is 3.3 million `{}` (9.4 MB). */
function cardBomb(): Buffer {
  const head =
    '{"spec":"chara_card_v2","spec_version":"2.0","data":{"name":"Bomb","description":"","first_mes":"","character_book":{"entries":[';
  const n = Math.floor((9.4 * MB - head.length - 8) / 3);
  return Buffer.from(`${head}${'{},'.repeat(n)}{}]}}}`);
}

function request(
  method: string,
  path: string,
  o: { body?: Buffer; type?: string; keepBody?: boolean } = {},
): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(
      `${attack.url}${path}`,
      {
        method,
        headers: {
          cookie: attack.cookie,
          'x-agentsville': '1',
          ...(o.body
            ? { 'content-type': o.type ?? 'application/json', 'content-length': o.body.length }
            : {}),
        },
      },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
        res.once('error', () => resolve(-1));
      },
    );
    req.once('error', () => resolve(-1));
    req.end(o.body);
  });
}

/** Keeps `n` copies of `one` going until told to stop. */
async function flood(n: number, one: (i: number) => Promise<void>): Promise<void> {
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      while (!stopping) {
        await one(i).catch(() => count('error'));
        // A refused attacker comes straight back, as a script would (a little pause so it is not a busy loop).
        await sleep(20);
      }
    }),
  );
}

/** A page server of the attacker's own: every page answers after 25 s, one byte a second after that. */
async function slowPageServer(): Promise<string> {
  const server = http.createServer((_req, res) => {
    count('page-server:hit');
    const timer = setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/html' });
      const trickle = setInterval(() => res.write('x'), 1000);
      res.once('close', () => clearInterval(trickle));
    }, 25_000);
    res.once('close', () => clearTimeout(timer));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const conversation = (i: number) => attack.conversationIds[i % attack.conversationIds.length]!;

async function run(): Promise<void> {
  const record = (status: number) => count(`${attack.kind}:${status}`);
  switch (attack.kind) {
    case 'import-bomb': {
      const body = importBomb();
      return flood(attack.concurrency, async () =>
        record(await request('POST', '/api/conversations/import', { body, type: FILE })),
      );
    }
    case 'card-bomb': {
      const body = cardBomb();
      return flood(attack.concurrency, async () =>
        record(await request('POST', '/api/npcs/import', { body, type: FILE })),
      );
    }
    case 'trickle':
      // Import bodies sent a byte every half second: under the old code each held an import slot while trickling.
      return flood(attack.concurrency, async () => {
        const status = await new Promise<number>((resolve) => {
          const req = http.request(`${attack.url}/api/conversations/import`, {
            method: 'POST',
            headers: {
              cookie: attack.cookie,
              'x-agentsville': '1',
              'content-type': FILE,
              'content-length': 1_000_000,
            },
          });
          req.once('response', (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.once('error', () => resolve(-1));
          count('trickle:opened');
          const drip = setInterval(() => {
            if (stopping) req.destroy();
            else req.write('{');
          }, 500);
          req.once('close', () => clearInterval(drip));
        });
        record(status);
      });
    case 'exports':
      // Exports started and never read: each would hold an export slot until its deadline.
      return flood(attack.concurrency, async (i) => {
        const status = await new Promise<number>((resolve) => {
          const req = http.get(
            `${attack.url}/api/conversations/${conversation(i)}/export?format=json`,
            { headers: { cookie: attack.cookie } },
            (res) => {
              count(`exports:${res.statusCode}`);
              res.pause();
              res.once('close', () => resolve(res.statusCode ?? 0));
            },
          );
          req.once('error', () => resolve(-1));
          const watch = setInterval(() => stopping && req.destroy(), 250);
          req.once('close', () => clearInterval(watch));
        });
        if (status !== 200) record(status);
      });
    case 'heavy-read':
      return flood(attack.concurrency, async (i) =>
        record(await request('GET', `/api/conversations/${conversation(i)}/messages?limit=200`)),
      );
    case 'pages': {
      const origin = await slowPageServer();
      let n = 0;
      return flood(attack.concurrency, async (i) => {
        const body = Buffer.from(JSON.stringify({ url: `${origin}/page-${n++}` }));
        record(await request('POST', `/api/conversations/${conversation(i)}/attachments/url`, { body }));
      });
    }
    case 'sandbox':
      // Each command sleeps most of the tool's time limit (the fake Provider turns "RUN …" into a bash call).
      return flood(attack.concurrency, async (i) => {
        const body = Buffer.from(JSON.stringify({ text: 'RUN sleep 28' }));
        record(await request('POST', `/api/conversations/${conversation(i)}/messages`, { body }));
      });
  }
}

process.once('SIGTERM', () => {
  stopping = true;
  process.stdout.write(`${JSON.stringify(counts)}\n`, () => process.exit(0));
});
// Loaded and compiled: the harness waits for every attacker's start before its settling time begins.
process.stdout.write('started\n');
await run();
// An attack that ends on its own (it should not) still reports.
await new Promise<void>(() => {});
