import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readingNow } from '../../src/attachments/page.ts';
import { commandsRunning, commandsRunningBy } from '../../src/tools/sandbox/host.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';
import { until } from '../support/until.ts';

// Several Players against the real server: what one or a few Players start never holds every slot of a kind, and
// a Player waiting gets the next one (ADR 0057).
let app: TestApp;
let site: http.Server;
let siteUrl: string;
beforeAll(async () => {
  app = await startTestApp({}, { TOOL_TIMEOUT_MS: '60000', ALLOW_PRIVATE_PAGE_URLS: 'true' });
  site = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    if (req.url?.startsWith('/slow'))
      // Slow to turn into text: a large table.
      res.end(
        `<html><body><table>${'<tr><td>cell</td><td>more</td></tr>'.repeat(50_000)}</table></body></html>`,
      );
    else res.end('<html><head><title>Tiny</title></head><body><p>A tiny page.</p></body></html>');
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await app?.close();
  site?.closeAllConnections();
  await new Promise((r) => site?.close(r));
});

describe('exports', () => {
  it('four Players reading none of their exports leave a slot for a fifth', async () => {
    const players = await Promise.all(Array.from({ length: 5 }, () => app.signIn()));
    const big = async (cookie: string) => {
      const { conversationId: c } = await setupConversation(app, cookie);
      // About 8 MB: a reader taking nothing keeps the export running.
      await app.db.sql`insert into messages (conversation_id, role, parts, text)
        select ${c}, 'player', jsonb_build_array(jsonb_build_object('type', 'text', 'text', repeat('w', 4000))),
          repeat('w', 4000) from generate_series(1, 2000)`;
      return c;
    };
    const unread = (cookie: string, c: string) => {
      const req = http.get(new URL(`/api/conversations/${c}/export`, app.running.listenUrl), {
        headers: { cookie },
      });
      req.on('error', () => {});
      const started = new Promise<void>((resolve) =>
        req.on('response', (res) => {
          res.pause(); // reads nothing
          resolve();
        }),
      );
      return { req, started };
    };
    const attackers = players.slice(0, 4);
    const held: ReturnType<typeof unread>[] = [];
    for (const [i, p] of attackers.entries()) {
      const c = await big(p.cookie);
      const first = unread(p.cookie, c);
      held.push(first);
      await first.started;
      const second = unread(p.cookie, c);
      held.push(second);
      // The fourth Player's second export waits: the last two slots are kept for Players exporting nothing.
      if (i < 3) await second.started;
    }
    await new Promise((r) => setTimeout(r, 300));
    const victim = players[4]!;
    const { conversationId } = await setupConversation(app, victim.cookie);
    const res = await app.api(`/api/conversations/${conversationId}/export`, { cookie: victim.cookie });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { format: string }).format).toBe('agentsville.conversation');
    for (const h of held) h.req.destroy();
  });
});

describe('page conversion', () => {
  it("two Players' long lines of slow pages do not hold up another Player's one page", async () => {
    const [a, b, victim] = await Promise.all([app.signIn(), app.signIn(), app.signIn()]);
    const conversationOf = async (cookie: string) => (await setupConversation(app, cookie)).conversationId;
    const [ca, cb, cv] = await Promise.all([a!, b!, victim!].map((p) => conversationOf(p.cookie)));
    const attach = (cookie: string, conversationId: string, url: string) =>
      app.api(`/api/conversations/${conversationId}/attachments/url`, { cookie, body: { url } });
    const answered: string[] = [];
    const lines = [
      [a!, ca!],
      [b!, cb!],
    ].flatMap(([p, c], n) =>
      Array.from({ length: 8 }, (_, i) =>
        attach((p as { cookie: string }).cookie, c as string, `${siteUrl}/slow?${n}-${i}`).then(
          async (res) => {
            const body = (await res.json()) as { error?: { message: string } };
            answered.push(
              `attacker ${res.status}${/took too long/.test(body.error?.message ?? '') ? ' slow' : ''}`,
            );
          },
        ),
      ),
    );
    // Their pages converting (kept-warm threads convert each in well under a second, so all three slots are seldom
    // seen held at once), the rest of their pages waiting.
    for (let i = 0; readingNow() < 2; i++) {
      if (i > 4000) throw new Error(`never busy: ${answered.join(', ')}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    const mine = await attach(victim!.cookie, cv!, `${siteUrl}/tiny`);
    expect(mine.status).toBe(201);
    expect(((await mine.json()) as { title: string }).title).toBe('Tiny');
    // The tiny page was converted in the next free slot, ahead of the pages already waiting.
    expect(answered.length).toBeLessThanOrEqual(8);
    await Promise.all(lines);
    // Theirs are attached, or (on a machine too busy to convert sixteen pages in time) refused in words as busy
    // or as too slow to read.
    for (const a of answered) expect(a).toMatch(/^attacker (201|503|422 slow)$/);
  }, 60_000);
});

describe('sandbox commands', () => {
  /** The model runs the command the Player's Message names ("run …"), then says it is done. */
  const commandScript = (r: Reply) => {
    const last = r.request.messages.at(-1)!;
    if (last.role === 'tool') {
      r.text('Done.');
      r.finish();
      return;
    }
    const text = JSON.stringify(last.content);
    const command = /run ([^"\\]+)/.exec(text)![1]!;
    r.toolCallStart(0, 'call_bash', 'bash', JSON.stringify({ command }));
    r.finish('tool_calls');
  };

  const sandboxed = async (cookie: string) => {
    const { conversationId, npcIds } = await setupConversation(app, cookie);
    await app.api(`/api/npcs/${npcIds[0]}/grants`, {
      method: 'PUT',
      cookie,
      body: { grants: [{ kind: 'sandbox' }] },
    });
    return conversationId;
  };
  const run = async (cookie: string, conversationId: string, command: string) => {
    app.fake.enqueue(commandScript, commandScript);
    await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: `run ${command}` },
      }),
    );
    const reply = (await messages(app, cookie, conversationId)).at(-1)!;
    return reply.parts.find((p) => (p as { type: string }).type === 'tool') as {
      state: string;
      output?: { stdout: string };
      error?: string;
    };
  };

  it("two Players' long commands leave a slot for a third Player's command, which runs at once", async () => {
    const [mallory, eve, victim] = await Promise.all([app.signIn(), app.signIn(), app.signIn()]);
    const conversations = await Promise.all(
      [mallory!, mallory!, eve!, eve!].map(async (p) => ({ p, c: await sandboxed(p.cookie) })),
    );
    const mine = await sandboxed(victim!.cookie);
    const long = conversations.map(({ p, c }) => run(p.cookie, c, 'sleep 25'));
    // Whoever came first holds two slots, the other one; the other's second waits: the last slot is kept for a
    // Player running none. (Which of the two gets in first depends on how their turns arrive.)
    await until(
      'their commands running',
      async () => commandsRunning() >= 3 && [mallory!, eve!].some((p) => commandsRunningBy(p.playerId) === 2),
      60_000,
    );
    const [first, second] = commandsRunningBy(mallory!.playerId) === 2 ? [mallory!, eve!] : [eve!, mallory!];
    expect(commandsRunningBy(second.playerId)).toBe(1);
    const part = await run(victim!.cookie, mine, 'echo hi');
    expect(part.state).toBe('done');
    expect(part.output!.stdout).toBe('hi\n');
    // Done while the first Player's commands still run: it did not wait behind them.
    expect(commandsRunningBy(first.playerId)).toBe(2);
    // The first Player's two and the other's first ran whole; the other's second found no slot it could take
    // within its wait: refused in words.
    const [m1, m2, e1, e2] = await Promise.all(long);
    const [ones, others] =
      first === mallory
        ? [
            [m1, m2],
            [e1, e2],
          ]
        : [
            [e1, e2],
            [m1, m2],
          ];
    for (const p of ones) expect(p!.state).toBe('done');
    expect([others[0]!.state, others[1]!.state].sort()).toEqual(['done', 'failed']);
    expect(others.find((p) => p!.state === 'failed')!.error).toMatch(
      /The sandbox is busy with other commands on this server: this one waited 10 s and did not run/,
    );
  }, 180_000);
});
