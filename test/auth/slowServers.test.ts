import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { until } from '../support/until.ts';

/**
 * A Player's own server that hangs (issue 25): every request is held until the test lets them go, then
 * answered 503 at once. It counts the requests in flight and the most it ever saw at once.
 */
async function hangingServer() {
  let inFlight = 0;
  let most = 0;
  let seen = 0;
  let hanging = true;
  const held: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    seen++;
    inFlight++;
    most = Math.max(most, inFlight);
    res.on('close', () => {
      inFlight--;
    });
    const fail = () =>
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: 'Unavailable', message: 'down' }));
    req.resume();
    if (hanging) held.push(fail);
    else fail();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => held.length,
    inFlight: () => inFlight,
    most: () => most,
    seen: () => seen,
    letGo() {
      hanging = false;
      for (const f of held.splice(0)) f();
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };
let bob: { cookie: string; did: string; playerId: string };
beforeAll(async () => {
  local = await startLocalApp();
  alice = await local.signInAs('alice.test');
  bob = await local.signInAs('bob.test');
  await local.browser.page.goto('about:blank');
}, 120_000);
afterAll(() => local?.close());

const sql = () => local.app.db.sql;
/** Backends of the app's database waiting on a lock inside PostgreSQL (an advisory lock's waiters would). */
const lockWaiters = async () =>
  (
    await sql()<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`
  )[0]!.n;
const leases = async (like: string) =>
  (await sql()<{ n: number }[]>`select count(*)::int as n from leases where name like ${like}`)[0]!.n;
const code = async (res: Response) => ((await res.json()) as { error?: { code: string } }).error?.code;

/** A Conversation of two plain turns (no links or mentions: publishing it calls nothing but the PDS). */
async function conversation(playerId: string) {
  const [c] =
    await sql()`insert into conversations (player_id, title) values (${playerId}, 'Slow') returning id`;
  for (const [i, text] of ['Hello there', 'Hello back'].entries()) {
    await sql()`insert into messages (conversation_id, role, parts, text, created_at)
      values (${c!.id}, 'player', ${sql().json([{ type: 'text', text }])}, ${text},
        ${new Date(Date.UTC(2026, 10, 1, 10, i))})`;
  }
  return c!.id as string;
}

describe('a Player whose own servers hang', () => {
  it('refreshes wait on a lease, holding no connection; another Player’s /api/me answers meanwhile', async () => {
    const as = await hangingServer();
    try {
      const [saved] = await sql()`select value from oauth_sessions where did = ${alice.did}`;
      // Due for a refresh, at an authorization server that never answers.
      await sql()`update oauth_sessions set value = jsonb_set(jsonb_set(value,
          '{tokenSet,expires_at}', '"2000-01-01T00:00:00.000Z"'), '{tokenSet,iss}', to_jsonb(${as.base}::text))
        where did = ${alice.did}`;
      const stuck = [0, 1, 2, 3].map(() => local.app.api('/api/me', { cookie: alice.cookie }));
      await until('the refresh reaches the hanging server', async () => as.held() > 0);
      await new Promise((r) => setTimeout(r, 500));
      // One refresh at a time (the lease), holding its lease row and no connection; nothing waits in PostgreSQL.
      expect(as.inFlight()).toBe(1);
      expect(await leases('oauth:%')).toBe(1);
      expect(await lockWaiters()).toBe(0);
      // Bob is not held up.
      const other = await local.app.api('/api/me', { cookie: bob.cookie });
      expect(other.status).toBe(200);
      expect(await local.app.running.sql`select 1 as one`).toEqual([{ one: 1 }]);
      as.letGo();
      const answers = await Promise.all(stuck);
      expect(answers.map((a) => a.status)).toEqual([502, 502, 502, 502]);
      expect(await code(answers[0]!)).toBe('PDS_UNREACHABLE');
      expect(as.most()).toBe(1);
      expect(await leases('oauth:%')).toBe(0);
      // Kept through it all: back to the real server, the same cookie works.
      await sql()`update oauth_sessions set value = ${sql().json(saved!.value)} where did = ${alice.did}`;
      expect((await local.app.api('/api/me', { cookie: alice.cookie })).status).toBe(200);
    } finally {
      await as.close();
    }
  }, 60_000);

  it('at most two calls at once reach a Player’s PDS; another Player publishes meanwhile', async () => {
    const pds = await hangingServer();
    const [saved] = await sql()`select value from oauth_sessions where did = ${alice.did}`;
    try {
      const mine = await Promise.all([0, 1, 2, 3].map(() => conversation(alice.playerId)));
      const theirs = await conversation(bob.playerId);
      // Alice's repo calls go to a PDS that hangs.
      await sql()`update oauth_sessions set value = jsonb_set(value, '{tokenSet,aud}', to_jsonb(${pds.base}::text))
        where did = ${alice.did}`;
      const publish = (cookie: string, id: string) =>
        local.app.api(`/api/conversations/${id}/publication`, {
          method: 'PUT',
          cookie,
          body: { choices: {} },
        });
      const stuck = mine.map((id) => publish(alice.cookie, id));
      await until('two calls reach the hanging PDS', async () => pds.held() === 2);
      await new Promise((r) => setTimeout(r, 500));
      expect(pds.inFlight()).toBe(2);
      // Four publications hold four leases, and no connection.
      expect(await leases('publication:%')).toBe(4);
      expect(await lockWaiters()).toBe(0);
      // Bob publishes to the real PDS at once.
      const other = await publish(bob.cookie, theirs);
      expect(other.status).toBe(200);
      pds.letGo();
      const answers = await Promise.all(stuck);
      expect(answers.map((a) => a.status)).toEqual([502, 502, 502, 502]);
      expect(await code(answers[0]!)).toBe('PUBLISH_INCOMPLETE');
      // Retries and all: never more than two at once.
      expect(pds.seen()).toBeGreaterThan(4);
      expect(pds.most()).toBe(2);
      expect(await leases('publication:%')).toBe(0);
    } finally {
      await sql()`update oauth_sessions set value = ${sql().json(saved!.value)} where did = ${alice.did}`;
      await pds.close();
    }
  }, 120_000);
});
