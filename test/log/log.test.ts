import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, currentRequestId, requestLogging } from '../../src/log/index.ts';
import { textScript } from '../support/fakeProvider.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { parsePrometheus } from '../support/prometheus.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

/** Every line the server logs, as written. */
const written: string[] = [];
const capture = { write: (line: string) => void written.push(line) };
const lines = () => written.join('').trim().split('\n');
const parsed = () => lines().map((l) => JSON.parse(l) as Record<string, unknown>);

const METRICS_TOKEN = 'metrics-token-for-the-test-0002';
const scrape = async () => {
  const res = await local.app.api('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  return parsePrometheus(await res.text());
};
let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };

beforeAll(async () => {
  local = await startLocalApp({
    logger: createLogger({ level: 'debug', destination: capture }),
    env: { METRICS_TOKEN },
  });
  alice = await local.signInAs('alice.test');
}, 120_000);
afterAll(() => local?.close());

// Distinctive words: found in the log, they were logged, not there by chance.
const ASKED = 'Tell me about zqplover and zqwarbler please';
const REPLY = 'The vault code is zxcovered7 and the map is zqheron';
const COVERED = 'zxcovered7';

describe('the server log', () => {
  it('is JSON lines naming the request for a turn and a publish with redactions, and holds none of the secrets', async () => {
    const app = local.app;
    const { conversationId } = await setupConversation(app, alice.cookie);
    app.fake.enqueue(textScript(REPLY));
    const turn = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie: alice.cookie,
      body: { text: ASKED },
      headers: { 'x-request-id': 'turn-request-0001' },
    });
    expect(turn.headers.get('x-request-id')).toBe('turn-request-0001');
    const frames = await collectFrames(turn);
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });

    const before = await scrape();
    const [reply] = await app.db.sql<{ id: string }[]>`select id from messages
      where conversation_id = ${conversationId} and role = 'npc'`;
    const at = REPLY.indexOf(COVERED);
    const publish = await app.api(`/api/conversations/${conversationId}/publication`, {
      cookie: alice.cookie,
      method: 'PUT',
      // Malformed: the server gives the request an id of its own.
      headers: { 'x-request-id': 'bad id {forged}' },
      body: {
        title: 'About birds',
        choices: { [reply!.id]: { redactions: [{ start: at, end: at + COVERED.length }] } },
      },
    });
    expect(publish.status).toBe(200);
    const publishId = publish.headers.get('x-request-id')!;
    // The publish is counted too (in this file: the metrics test has no PDS to publish to).
    const after = await scrape();
    const moved = (series: string) => (after.get(series) ?? 0) - (before.get(series) ?? 0);
    expect(moved('agentsville_publish_outcomes_total{outcome="published"}')).toBe(1);
    expect(moved('agentsville_apply_writes_total{outcome="ok"}')).toBeGreaterThanOrEqual(1);
    expect(publishId).toMatch(/^[0-9a-f-]{36}$/);

    // Every line is JSON with a level and a time; the request lines of both name their request.
    const entries = parsed();
    for (const e of entries) expect(e).toMatchObject({ level: expect.any(Number), time: expect.any(String) });
    const requestLine = (id: string, path: string) =>
      entries.find((e) => e.reqId === id && (e.req as { url?: string } | undefined)?.url === path);
    expect(requestLine('turn-request-0001', `/api/conversations/${conversationId}/messages`)).toMatchObject({
      subsystem: 'http',
      res: { statusCode: 200 },
    });
    expect(requestLine(publishId, `/api/conversations/${conversationId}/publication`)).toMatchObject({
      subsystem: 'http',
      res: { statusCode: 200 },
    });
    // The sign-in went through the OAuth pages: its callback is logged by path, its code is not.
    expect(entries.some((e) => (e.req as { url?: string } | undefined)?.url === '/oauth/callback')).toBe(
      true,
    );

    // The secrets: the session cookie, the OAuth tokens and DPoP key, the message text and the covered words.
    const [session] = await app.db.sql<{ value: Record<string, unknown> }[]>`select value from oauth_sessions
      where did = ${alice.did}`;
    const tokenSet = session!.value.tokenSet as { access_token: string; refresh_token?: string };
    const dpopKey = JSON.stringify(session!.value.dpopJwk ?? session!.value.dpopKey ?? '');
    const secrets = [
      alice.cookie.split('=')[1]!,
      tokenSet.access_token,
      ...(tokenSet.refresh_token ? [tokenSet.refresh_token] : []),
      ...[...dpopKey.matchAll(/"d":"([^"]+)"/g)].map((m) => m[1]!),
      'zqplover',
      'zqwarbler',
      'zqheron',
      COVERED,
    ];
    expect(secrets.length).toBeGreaterThanOrEqual(7);
    const log = written.join('');
    for (const secret of secrets) expect(log, secret.slice(0, 12)).not.toContain(secret);
  });

  it('names the request on lines written by work the request started after it ended', async () => {
    const out: string[] = [];
    const logger = createLogger({ destination: { write: (l: string) => void out.push(l) } });
    const later = new Promise<void>((resolve) => {
      const app = express();
      app.use(requestLogging(logger));
      app.post('/start', express.json(), (_req, res) => {
        // Background work, after the body was read (a stream's events) and the answer sent.
        setTimeout(() => {
          logger.info({ seen: currentRequestId() }, 'background');
          resolve();
        }, 20);
        res.json({ ok: true });
      });
      const server = app.listen(0, async () => {
        const port = (server.address() as { port: number }).port;
        await fetch(`http://127.0.0.1:${port}/start`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': 'background-0001' },
          body: '{}',
        });
        await later;
        server.close();
      });
    });
    await later;
    const background = out.map((l) => JSON.parse(l)).find((e) => e.msg === 'background');
    expect(background).toMatchObject({ reqId: 'background-0001', seen: 'background-0001' });
  });
});
