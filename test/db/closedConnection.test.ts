import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { connect, type Sql, transaction } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { startPgProxy } from '../support/pgProxy.ts';

// ADR 0104: a statement written to a connection that closed while it was held (a transaction's, a reserved one's)
// fails with a connection error its caller can catch. postgres.js 3.4 wrote it to the null socket from a timer,
// an uncaught TypeError that ended the process (porsager/postgres#1208); `patches/` mends it at install.
let db: TestDatabase;
let proxy: Awaited<ReturnType<typeof startPgProxy>>;
let pool: Sql;
const uncaught: unknown[] = [];
const note = (e: unknown) => void uncaught.push(e);
beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await startPgProxy(db.url);
  pool = connect(proxy.url, { max: 2 });
  process.on('uncaughtException', note);
});
// A test that failed part-way leaves the database refusing: each starts with it back.
beforeEach(() => back());
afterAll(async () => {
  process.off('uncaughtException', note);
  await pool?.end({ timeout: 1 });
  await proxy?.close();
  await db?.drop();
});

/** Drops every connection through the proxy, and lets the client see its sockets close before going on. */
async function restart() {
  proxy.dropAll();
  await new Promise((r) => setTimeout(r, 200));
}

/** The database back, and the pool answering again. */
async function back() {
  proxy.accept();
  await expect
    .poll(async () => (await pool`select 3 as n`.catch(() => []))[0]?.n, { timeout: 10_000 })
    .toBe(3);
}

/** How `p` settled within 5 s: a statement that is never settled (written to nowhere) fails here, not at the timeout. */
function settled(p: Promise<unknown>) {
  return Promise.race([
    p.then(
      () => 'fulfilled',
      (e: { code?: string }) => e.code ?? String(e),
    ),
    new Promise((r) => setTimeout(() => r('never settled'), 5000).unref()),
  ]);
}

it("fails a transaction's statement sent after its connection closed, and the pool goes on once the database is back", async () => {
  const drops = proxy.state.drops;
  const outcome = transaction(pool, async (tx) => {
    await tx`select 1`;
    // The transaction awaits something else (a Provider, a file) while the database restarts.
    await restart();
    return tx`select 2 as n`;
  });
  expect(await settled(outcome)).toBe('CONNECTION_CLOSED');
  expect(proxy.state.drops).toBe(drops + 1);
  expect(uncaught).toEqual([]);
  // The dead connection was not given back: the pool opens another.
  await back();
}, 30_000);

it('fails each statement sent on a reserved connection after it closed, the second as the first', async () => {
  const held = await pool.reserve();
  await held`select 1`;
  await restart();
  // Small statements are written on the next turn of the event loop, large ones at once: both are settled.
  expect(await settled(held`select 2`)).toBe('CONNECTION_CLOSED');
  expect(await settled(held`select ${'x'.repeat(4096)}::text`)).toBe('CONNECTION_CLOSED');
  expect(await settled(held`select 3`)).toBe('CONNECTION_CLOSED');
  expect(uncaught).toEqual([]);
}, 30_000);
