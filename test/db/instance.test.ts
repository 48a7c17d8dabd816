import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect, LIVE_INSTANCES, registerInstance, type Sql } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { startPgProxy } from '../support/pgProxy.ts';

// ADR 0102: a server's liveness is an advisory lock on a connection of its own. A database restart drops the lock
// with the server alive; it takes it again, under the same id, once the database is back.
let db: TestDatabase;
let proxy: Awaited<ReturnType<typeof startPgProxy>>;
let pool: Sql;
beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await startPgProxy(db.url);
  pool = connect(proxy.url, { max: 3 });
});
afterAll(async () => {
  await pool?.end({ timeout: 1 });
  await proxy?.close();
  await db?.drop();
});

const live = async (id: number) =>
  (await db.sql`select 1 from (${db.sql.unsafe(LIVE_INSTANCES)}) l(id) where id = ${id}`).length > 0;

it('takes its lock again, under the same id, after the database dropped every connection; one release frees it', async () => {
  const lines: string[] = [];
  const instance = await registerInstance(pool, { checkMs: 100, log: (m) => lines.push(m) });
  expect(await live(instance.id)).toBe(true);
  proxy.dropAll();
  // Gone with its connection: every server now takes this one for dead.
  await expect.poll(() => live(instance.id), { timeout: 10_000, interval: 50 }).toBe(false);
  proxy.accept();
  await expect.poll(() => live(instance.id), { timeout: 15_000, interval: 100 }).toBe(true);
  expect(lines.some((l) => l.includes('lost with its connection'))).toBe(true);
  expect(lines.some((l) => l.includes('its lock is held again'))).toBe(true);
  // Asked on and on while held, it is taken once: one unlock at release frees it.
  await new Promise((r) => setTimeout(r, 500));
  await instance.release();
  expect(await live(instance.id)).toBe(false);
}, 60_000);

it('waits while its old session still holds the lock, and never takes it twice', async () => {
  const instance = await registerInstance(pool, { checkMs: 100 });
  // Another session holds the same lock (the old backend not yet gone): the check asks again, without error.
  const other = await db.sql.reserve();
  try {
    proxy.dropAll();
    await expect.poll(() => live(instance.id), { timeout: 10_000, interval: 50 }).toBe(false);
    const [got] = await other`select pg_try_advisory_lock(${LOCK_CLASS}, ${instance.id}) as ok`;
    expect(got!.ok).toBe(true);
    proxy.accept();
    await new Promise((r) => setTimeout(r, 1_000));
    // Held by the other session only.
    const holders =
      await db.sql`select pid from pg_locks where locktype = 'advisory' and objid = ${instance.id}
      and objsubid = 2 and granted`;
    expect(holders.length).toBe(1);
    await other`select pg_advisory_unlock(${LOCK_CLASS}, ${instance.id})`;
    // Freed: this server takes it back.
    await expect.poll(() => live(instance.id), { timeout: 10_000, interval: 100 }).toBe(true);
  } finally {
    other.release();
  }
  await instance.release();
  expect(await live(instance.id)).toBe(false);
}, 60_000);

/** The instance lock's class, as LIVE_INSTANCES names it. */
const LOCK_CLASS = Number(/classid = (\d+)/.exec(LIVE_INSTANCES)![1]);
