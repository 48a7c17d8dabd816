import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { transaction } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { startPgProxy } from '../support/pgProxy.ts';

// ADR 0104: a connection held by a transaction or a reservation can close while held (a restart, a failover).
// What is sent on it afterwards fails with CONNECTION_CLOSED, whatever the pool has done with the connection
// since, and the pool goes on. postgres.js 3.4 as released instead threw from a timer, uncaught, and ended the
// process (porsager/postgres#1208), or, once the pool had connected it again for other work, ran the holder's
// statements on the new session, outside its transaction. `patches/` mends it at install.
let db: TestDatabase;
let proxy: Awaited<ReturnType<typeof startPgProxy>>;
let pool: postgres.Sql;
let closes = 0;
const uncaught: unknown[] = [];
const note = (e: unknown) => void uncaught.push(e);
beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`create table kept (n int not null)`;
  proxy = await startPgProxy(db.url);
  process.on('uncaughtException', note);
});
// One connection: the pool has no other to connect again for its own work than the one held.
beforeEach(async () => {
  proxy.accept();
  closes = 0;
  pool = postgres(proxy.url, { max: 1, onnotice: () => {}, onclose: () => void closes++ });
  await db.sql`truncate kept`;
});
afterEach(async () => {
  await pool.end({ timeout: 1 });
  expect(uncaught).toEqual([]);
});
afterAll(async () => {
  process.off('uncaughtException', note);
  await proxy?.close();
  await db?.drop();
});

/** Every connection dropped (the database restarting), and the held one seen closed by its pool. */
async function restart() {
  proxy.dropAll();
  await expect.poll(() => closes, { timeout: 5000, interval: 10 }).toBe(1);
}

/** The database back, and the pool answering again: on its one connection, connected again. */
async function back() {
  proxy.accept();
  await expect
    .poll(async () => (await pool`select 3 as n`.catch(() => []))[0]?.n, { timeout: 10_000 })
    .toBe(3);
}

/** How `p` settled within 5 s; a statement written to nowhere fails here rather than at the test's timeout. */
function settled(p: Promise<unknown>) {
  return Promise.race([
    p.then(
      () => 'fulfilled',
      (e: { code?: string }) => e.code ?? String(e),
    ),
    new Promise((r) => setTimeout(() => r('never settled'), 5000).unref()),
  ]);
}

const kept = async () => (await db.sql`select n from kept order by n`).map((r) => r.n as number);

it("fails a transaction's statement sent after its connection closed", async () => {
  const outcome = transaction(pool, async (tx) => {
    await tx`insert into kept values (1)`;
    // The transaction awaits something else (a Provider, a file) while the database restarts.
    await restart();
    await tx`insert into kept values (2)`;
  });
  expect(await settled(outcome)).toBe('CONNECTION_CLOSED');
  await back();
  expect(await kept()).toEqual([]);
});

it('fails a transaction once the pool has connected its connection again for other work: nothing runs outside it', async () => {
  const outcome = transaction(pool, async (tx) => {
    await tx`insert into kept values (1)`;
    await restart();
    // Meanwhile the server goes on: the pool connects its one connection again for another statement.
    await back();
    await tx`insert into kept values (2)`;
  });
  expect(await settled(outcome)).toBe('CONNECTION_CLOSED');
  // Unpatched, 2 went in on the new session, and the COMMIT after it "succeeded" with a warning.
  expect(await kept()).toEqual([]);
});

it('fails sql.begin once the pool has connected its connection again: nothing runs outside it', async () => {
  const outcome = pool.begin(async (t) => {
    await t`insert into kept values (1)`;
    await restart();
    await back();
    await t`insert into kept values (2)`;
  });
  expect(await settled(outcome)).toBe('CONNECTION_CLOSED');
  await new Promise((r) => setTimeout(r, 200));
  expect(await kept()).toEqual([]);
});

it('fails each statement sent on a reserved connection after it closed; given back, it does not stop the pool', async () => {
  const held = await pool.reserve();
  await held`select 1`;
  await restart();
  // Small statements are written on the next turn of the event loop, large ones at once: both are settled.
  expect(await settled(held`select 2`)).toBe('CONNECTION_CLOSED');
  expect(await settled(held`select ${'x'.repeat(4096)}::text`)).toBe('CONNECTION_CLOSED');
  expect(await settled(held`select 3`)).toBe('CONNECTION_CLOSED');
  // Given back as a holder that does not look at the error would (unpatched, the pool's one connection was then
  // open with no socket, and failed everything sent to it for good).
  held.release();
  await back();
  held.release();
  expect((await pool`select 4 as n`)[0]!.n).toBe(4);
});

it('fails what waits behind a statement on a reserved connection when it closes', async () => {
  const held = await pool.reserve();
  // A statement with parameters is described first, so the one after it waits its turn on the client.
  const running = held`select pg_sleep(${2}), 'reserved'::text`.execute();
  const waiting = held`select 2`.execute();
  await expect.poll(() => sleeping('reserved'), { timeout: 5000, interval: 20 }).toBe(true);
  proxy.dropAll();
  expect(await settled(running)).toBe('CONNECTION_CLOSED');
  expect(await settled(waiting)).toBe('CONNECTION_CLOSED');
});

/** Whether this test's statement (marked by its text) is running: a backend an earlier test dropped may sleep on. */
const sleeping = async (mark: string) =>
  (
    await db.sql`select 1 from pg_stat_activity where datname = current_database() and state = 'active'
      and query like 'select pg_sleep%' and query like ${`%'${mark}'%`}`
  ).length > 0;

it('fails what waits behind a statement of sql.begin when its connection closes', async () => {
  let running: Promise<unknown> | undefined;
  let waiting: Promise<unknown> | undefined;
  const outcome = pool.begin(async (t) => {
    running = t`select pg_sleep(${2}), 'begun'::text`.execute();
    waiting = t`select 2`.execute();
    await Promise.all([running, waiting]);
  });
  await expect.poll(() => sleeping('begun'), { timeout: 5000, interval: 20 }).toBe(true);
  proxy.dropAll();
  // The running one fails as its socket did; the one behind it, and the transaction, with the connection.
  const lost = ['CONNECTION_CLOSED', 'ECONNRESET'];
  expect(lost).toContain(await settled(running!));
  expect(await settled(waiting!)).toBe('CONNECTION_CLOSED');
  expect(lost).toContain(await settled(outcome));
});
