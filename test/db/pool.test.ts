import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { defaultPoolSize, loadConfig } from '../../src/config.ts';
import { HELD_CONNECTIONS, reconnectBackoff } from '../../src/db/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

// The server's query pool is sized to the machine (ADR 0074): on few cores, queries pipelined onto a few
// connections cost less than more backends woken. The size is the operator's to set.

it('the pool is twice the cores, at least 4, unless DATABASE_POOL_SIZE says otherwise; a bad size is refused', () => {
  const base = { ATPROTO_NETWORK: 'public' };
  expect(loadConfig(base).databasePoolSize).toBe(defaultPoolSize());
  expect(defaultPoolSize()).toBeGreaterThanOrEqual(4);
  expect(loadConfig({ ...base, DATABASE_POOL_SIZE: '25' }).databasePoolSize).toBe(25);
  for (const bad of ['0', '-3', '2.5', 'many', '501'])
    expect(() => loadConfig({ ...base, DATABASE_POOL_SIZE: bad }), bad).toThrow(/DATABASE_POOL_SIZE/);
});

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({}, { DATABASE_POOL_SIZE: '1' });
});
afterAll(() => app.close());

it('the server opens no more connections than its pool and the held ones, however many requests come at once, and serves them all', async () => {
  const players = await Promise.all(Array.from({ length: 8 }, () => app.signIn()));
  const answers = await Promise.all(
    Array.from({ length: 48 }, (_, n) =>
      app.api('/api/conversations', { cookie: players[n % players.length]!.cookie }),
    ),
  );
  expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
  const [row] = await app.db.sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and application_name = 'agentsville'`;
  // The one query connection, the held ones (at most), and postgres.js's LISTEN connection.
  expect(row!.n).toBeGreaterThanOrEqual(1);
  expect(row!.n).toBeLessThanOrEqual(1 + HELD_CONNECTIONS + 1);
});

// After the database was gone a moment, a pool slot connects again within 2 s: postgres.js's own backoff grows to
// 20 s over the pool's failures in a row (test/turn/undecided.test.ts sees the server answer again in time).
it('a slot waits at most 2 s before connecting again, however many failures came before, and at first far less', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 1000 }), (retries) => {
      const wait = reconnectBackoff(retries);
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(2);
    }),
  );
  expect(reconnectBackoff(1)).toBeLessThanOrEqual(0.1);
  expect(reconnectBackoff(50)).toBeGreaterThanOrEqual(1);
});
