// The abuse scenario shared by the load test and the bench: one server (its own PLC + PDS), attacker Players as
// OS processes of their own running the attacks of issue #25 at once, and a victim Player measuring what a
// Player does — /healthz, /api/me, a turn's first frame, a tiny page, a sandbox command and a publish — first
// with nobody else on the server, then under the attacks.
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { median } from '../../scripts/bench/stats.ts';
import { createLogger } from '../../src/log/index.ts';
import type { Script } from '../support/fakeProvider.ts';
import { startLocalApp } from '../support/localnet.ts';
import type { Attack } from './attacker.ts';

export type Metric = 'healthz' | 'me' | 'firstFrame' | 'page' | 'sandbox' | 'publish';
export interface AbuseResult {
  /** Each metric's samples in ms, with nobody else on the server and under the attacks. */
  samples: Record<Metric, { unloaded: number[]; loaded: number[] }>;
  /** What each attacker process saw: answers by status and evidence its attack reached its target. */
  attackers: { kind: Attack['kind']; counts: Record<string, number> }[];
  /** Sandbox commands of the attackers the fake Provider was asked to run (each a bash call). */
  attackerCommands: number;
  /** The server process (app, PDS and PLC) while loaded: CPU ms per wall second, and its event loop's delay. */
  server: { cpuPerSecond: number; loopDelayP99Ms: number; loopDelayMaxMs: number };
  /** What the server logged at level error (an unexpected failure: a 500), one line each. */
  serverErrors: string[];
  /** The victim's requests that failed (each also counted at the deadline in its samples). */
  failures: string[];
}

const ROOT = path.resolve(import.meta.dirname, '../..');
const METRICS: Metric[] = ['healthz', 'me', 'firstFrame', 'page', 'sandbox', 'publish'];

/** The attacks, each from an account of its own (two sandbox accounts, as the issue measured). */
const ATTACKS: Omit<Attack, 'url' | 'cookie' | 'conversationIds'>[] = [
  { kind: 'import-bomb', concurrency: 2 },
  { kind: 'card-bomb', concurrency: 2 },
  { kind: 'trickle', concurrency: 6 },
  { kind: 'exports', concurrency: 8 },
  { kind: 'heavy-read', concurrency: 4 },
  { kind: 'pages', concurrency: 40 },
  { kind: 'sandbox', concurrency: 3 },
  { kind: 'sandbox', concurrency: 3 },
];

/** "RUN <command>" from the Player is one bash call, then "Done." once the tool's result is back. */
const route = (request: { messages: { role: string; content: unknown }[] }): Script | undefined => {
  const last = request.messages.at(-1);
  if (last?.role === 'tool')
    return (r) => {
      r.text('Done.');
      r.finish();
    };
  const command = /RUN ([^"\\]+)/.exec(JSON.stringify(last?.content ?? ''))?.[1];
  if (!command) return undefined;
  return (r) => {
    r.toolCallStart(0, `call_${Math.random().toString(36).slice(2)}`, 'bash', JSON.stringify({ command }));
    r.finish('tool_calls');
  };
};

const SAMPLE_DEADLINE_MS = 30_000;

export async function runAbuse(o: {
  adminDatabaseUrl?: string;
  samples: number;
  /** Only these attacks (to find what one costs); all of them when absent. */
  only?: Attack['kind'][];
  progress?: (line: string) => void;
}): Promise<AbuseResult> {
  const serverErrors: string[] = [];
  const logger = createLogger({
    level: 'error',
    format: 'json',
    destination: { write: (line: string) => void serverErrors.push(line.trim().slice(0, 2000)) },
  });
  const local = await startLocalApp({
    adminDatabaseUrl: o.adminDatabaseUrl,
    logger,
    env: { ALLOW_PRIVATE_PAGE_URLS: 'true', TOOL_TIMEOUT_MS: '30000' },
  });
  const { app } = local;
  app.fake.route = route;
  const sql = app.db.sql;
  const children: ChildProcess[] = [];
  const tinyPages = await tinyPageServer();
  try {
    await sql`update village_settings set turns_per_minute = 10000, concurrent_streams = 1000,
      player_daily_tokens = 1000000000000, village_daily_tokens = 1000000000000`;
    const victim = await local.signInAs('alice.test');
    const chat = await conversationWith(app, victim.cookie, true);
    const toPublish = await twoTurns(sql, victim.playerId);

    const listen = app.running.listenUrl;
    const measure: Record<Metric, () => Promise<number>> = {
      healthz: () => timed(() => fetch(`${listen}/healthz`).then(ok)),
      me: () => timed(() => app.api('/api/me', { cookie: victim.cookie }).then(ok)),
      firstFrame: () =>
        timed(async () => {
          const res = await app.api(`/api/conversations/${chat}/messages`, {
            cookie: victim.cookie,
            body: { text: 'Hello there' },
          });
          if (res.status !== 200) throw new Error(`turn: ${res.status} ${await res.text()}`);
          const reader = res.body!.getReader();
          await reader.read();
          // The clock stops at the first frame; the rest is read so the next turn may start.
          return async () => {
            while (!(await reader.read()).done) {}
          };
        }),
      page: () =>
        timed(() =>
          app
            .api(`/api/conversations/${chat}/attachments/url`, {
              cookie: victim.cookie,
              body: { url: `${tinyPages.origin}/p${Math.random()}` },
            })
            .then(ok),
        ),
      sandbox: () =>
        timed(async () => {
          const res = await app.api(`/api/conversations/${chat}/messages`, {
            cookie: victim.cookie,
            body: { text: 'RUN echo hi' },
          });
          const body = await res.text();
          if (res.status !== 200 || !body.includes('hi\\n'))
            throw new Error(`sandbox: ${res.status} ${body}`);
        }),
      publish: () =>
        timed(
          async () => {
            await app
              .api(`/api/conversations/${toPublish}/publication`, {
                method: 'PUT',
                cookie: victim.cookie,
                body: {},
              })
              .then(ok);
          },
          // Unpublished again outside the clock, so each sample publishes the same two turns afresh.
          () =>
            app
              .api(`/api/conversations/${toPublish}/publication`, { method: 'DELETE', cookie: victim.cookie })
              .then(ok),
        ),
    };
    const samples = Object.fromEntries(
      METRICS.map((m) => [m, { unloaded: [] as number[], loaded: [] as number[] }]),
    ) as AbuseResult['samples'];
    const failures: string[] = [];
    const round = async (side: 'unloaded' | 'loaded') => {
      for (let i = 0; i < o.samples; i++)
        for (const m of METRICS) {
          // A sample that never ends counts as the deadline (and the round goes on): a hang is a result too. So is
          // a refusal or a failure: counted at the deadline, and named.
          const ms = await Promise.race([
            measure[m]().catch((e: unknown) => {
              failures.push(`${side} ${m}: ${(e as Error).message.slice(0, 300)}`);
              return SAMPLE_DEADLINE_MS;
            }),
            new Promise<number>((r) => setTimeout(() => r(SAMPLE_DEADLINE_MS), SAMPLE_DEADLINE_MS).unref()),
          ]);
          samples[m][side].push(ms);
          o.progress?.(`${side} ${m} ${Math.round(ms)} ms`);
        }
    };
    await round('unloaded');

    // The attackers: a big Conversation to export and read, and sandboxed Conversations to run commands in.
    const attacks = ATTACKS.filter((a) => !o.only || o.only.includes(a.kind));
    for (const [i, a] of attacks.entries()) {
      const attacker = await app.signIn(`did:plc:attacker${i}${Date.now().toString(36)}`);
      const conversationIds =
        a.kind === 'exports' || a.kind === 'heavy-read'
          ? [await bigConversation(sql, attacker.playerId)]
          : a.kind === 'pages' || a.kind === 'sandbox'
            ? await Promise.all(
                [1, 2, 3].map(() => conversationWith(app, attacker.cookie, a.kind === 'sandbox')),
              )
            : [];
      children.push(
        watchAttacker(
          spawn(process.execPath, ['--import', 'tsx', 'test/load/attacker.ts'], {
            cwd: ROOT,
            env: {
              PATH: process.env.PATH ?? '',
              ATTACK: JSON.stringify({
                ...a,
                url: app.running.listenUrl,
                cookie: attacker.cookie,
                conversationIds,
              }),
            },
            stdio: ['ignore', 'pipe', 'inherit'],
          }),
        ),
      );
    }
    // Every attacker has loaded (eight compiles at once take seconds on two cores), then the attacks get going (the
    // bombs are built, the slow holders take what they can) before the victim starts.
    const started = children.map((child) => output.get(child)!.started);
    await Promise.race([Promise.all(started), new Promise((r) => setTimeout(r, 60_000))]);
    await new Promise((r) => setTimeout(r, 5_000));
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    await round('loaded');
    const cpu = process.cpuUsage(cpu0);
    loop.disable();
    const server = {
      cpuPerSecond: Math.round((cpu.user + cpu.system) / (performance.now() - wall0)),
      loopDelayP99Ms: Math.round(loop.percentile(99) / 1e6),
      loopDelayMaxMs: Math.round(loop.max / 1e6),
    };
    // Each attack has had its first answer before it reports (at most a minute more): a 9 MB card on a loaded machine
    // may still be in the server's hands when the victim's round ends — in flight while the victim was measured.
    const reached = children.map((child) => output.get(child)!.reached);
    await Promise.race([Promise.all(reached), new Promise((r) => setTimeout(r, 60_000))]);
    const attackers = await Promise.all(
      children.map(async (child, i) => ({ kind: attacks[i]!.kind, counts: await report(child) })),
    );
    const attackerCommands = app.fake.requests.filter((r) =>
      JSON.stringify(r.body.messages.at(-1)?.content ?? '').includes('RUN sleep 28'),
    ).length;
    return { samples, attackers, attackerCommands, server, serverErrors, failures };
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await tinyPages.close();
    await local.close();
  }
}

/** Runs `fn` and returns its wall time in ms; `fn` may return a tail (reading the rest), run after the clock. */
async function timed(fn: () => Promise<unknown>, after?: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  const tail = await fn();
  const ms = performance.now() - t0;
  if (typeof tail === 'function') await tail();
  await after?.();
  return ms;
}

async function ok(res: Response): Promise<void> {
  const body = await res.text();
  if (!res.ok) throw new Error(`${res.url}: ${res.status} ${body.slice(0, 300)}`);
}

/** An attacker's output, read from its start: it says `reached` at its first answer, and its counts as it ends. */
function watchAttacker(child: ChildProcess): ChildProcess {
  let out = '';
  // Each line the harness waits for: resolved once the attacker has printed it.
  const waiting: [string, () => void][] = [];
  const said = (line: string) => new Promise<void>((r) => waiting.push([`${line}\n`, r]));
  const heard = { out: () => out, reached: said('reached'), started: said('started') };
  child.stdout!.on('data', (d) => {
    out += d;
    for (const [line, resolve] of waiting) if (out.includes(line)) resolve();
  });
  // The attackers stand for other machines on the network: their own CPU (building bombs, making requests) is not
  // the server's to share, so it yields to the server's. What they send still reaches the server in full; the
  // server's own work for them (parsing, sandboxes, PostgreSQL) runs at the server's priority.
  try {
    os.setPriority(child.pid!, 10);
  } catch {}
  output.set(child, heard);
  return child;
}
const output = new WeakMap<
  ChildProcess,
  { out: () => string; reached: Promise<void>; started: Promise<void> }
>();

async function report(child: ChildProcess): Promise<Record<string, number>> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  const out = output.get(child)?.out().trim() ?? '';
  const last = out.split('\n').at(-1) ?? '';
  return last.startsWith('{') ? (JSON.parse(last) as Record<string, number>) : {};
}

async function conversationWith(
  app: Awaited<ReturnType<typeof startLocalApp>>['app'],
  cookie: string,
  sandbox: boolean,
): Promise<string> {
  const npc = await app.api('/api/npcs', { cookie, body: { name: 'Ada', jobTitle: 'Librarian' } });
  const npcId = ((await npc.json()) as { npc: { id: string } }).npc.id;
  if (sandbox)
    await app.api(`/api/npcs/${npcId}/grants`, {
      method: 'PUT',
      cookie,
      body: { grants: [{ kind: 'sandbox' }] },
    });
  const res = await app.api('/api/conversations', { cookie, body: { npcIds: [npcId] } });
  return ((await res.json()) as { conversation: { id: string } }).conversation.id;
}

type Sql = Awaited<ReturnType<typeof startLocalApp>>['app']['db']['sql'];

/** 2,000 Messages of ~5 KB (10 MB): what an attacker exports and reads back again and again. */
async function bigConversation(sql: Sql, playerId: string): Promise<string> {
  const [npc] = await sql`insert into npcs (player_id, name) values (${playerId}, 'Ada') returning id`;
  const [c] =
    await sql`insert into conversations (player_id, title) values (${playerId}, 'Big') returning id`;
  await sql`insert into conversation_participants values (${c!.id}, ${npc!.id}, 0)`;
  await sql`insert into messages (conversation_id, role, npc_id, npc_name, parts, text, provider, model)
    select ${c!.id}, case when i % 2 = 0 then 'player' else 'npc' end,
      case when i % 2 = 0 then null else ${npc!.id}::uuid end, case when i % 2 = 0 then null else 'Ada' end,
      jsonb_build_array(jsonb_build_object('type', 'text', 'text', repeat('words ', 850))),
      repeat('words ', 850), 'fake', 'fake-model'
    from generate_series(1, 2000) i`;
  return c!.id as string;
}

/** Two turns of the victim's, to publish. */
async function twoTurns(sql: Sql, playerId: string): Promise<string> {
  const [npc] = await sql`insert into npcs (player_id, name) values (${playerId}, 'Ada') returning id`;
  const [c] =
    await sql`insert into conversations (player_id, title) values (${playerId}, 'Short') returning id`;
  await sql`insert into conversation_participants values (${c!.id}, ${npc!.id}, 0)`;
  const [first] = await sql`insert into messages (conversation_id, role, parts, text)
    values (${c!.id}, 'player', ${sql.json([{ type: 'text', text: 'Hello, Ada.' }])}, 'Hello, Ada.') returning id`;
  await sql`insert into messages (conversation_id, parent_id, role, npc_id, npc_name, parts, text, provider, model)
    values (${c!.id}, ${first!.id}, 'npc', ${npc!.id}, 'Ada', ${sql.json([{ type: 'text', text: 'Hello.' }])},
      'Hello.', 'fake', 'fake-model')`;
  return c!.id as string;
}

/** The victim's own page: a few words, at once. */
async function tinyPageServer(): Promise<{ origin: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html><head><title>Tiny</title></head><body><p>A tiny page.</p></body></html>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * A metric's loaded time against its unloaded time, the unloaded time taken as at least 1 s: "within 2× of the
 * unloaded time, or within 2 s where the unloaded time is tiny and the shared machine's noise dominates".
 */
export { median };
export const abuseRatio = (s: { unloaded: number[]; loaded: number[] }): number =>
  median(s.loaded) / Math.max(median(s.unloaded), 1000);
