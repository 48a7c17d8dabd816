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

it('waits while another session holds its lock, and takes it back once freed', async () => {
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
    // Held by the other session, not taken from it.
    const [holder] =
      await db.sql`select pid from pg_locks where locktype = 'advisory' and classid = ${LOCK_CLASS}
      and objid = ${instance.id} and objsubid = 2 and granted`;
    const [mine] = await other`select pg_backend_pid() as pid`;
    expect(holder!.pid).toBe(mine!.pid);
    await other`select pg_advisory_unlock(${LOCK_CLASS}, ${instance.id})`;
    // Freed: this server takes it back.
    await expect.poll(() => live(instance.id), { timeout: 10_000, interval: 100 }).toBe(true);
  } finally {
    other.release();
  }
  await instance.release();
  expect(await live(instance.id)).toBe(false);
}, 60_000);

it('never writes to its connection once it closed on this side: its release ends the backend left holding the lock', async () => {
  const instance = await registerInstance(pool, { checkMs: 100 });
  proxy.dropClients();
  // The backend lives on, holding the lock: the server still counts as alive, and nothing is taken again.
  await new Promise((r) => setTimeout(r, 500));
  expect(await live(instance.id)).toBe(true);
  // Written to, the closed connection cannot reach the backend: the release ends it through the pool.
  await instance.release();
  await expect.poll(() => live(instance.id), { timeout: 5_000, interval: 100 }).toBe(false);
  // The pool goes on.
  expect((await pool`select 1 as one`)[0]!.one).toBe(1);
}, 60_000);

/** The instance lock's class, as LIVE_INSTANCES names it. */
const LOCK_CLASS = Number(/classid = (\d+)/.exec(LIVE_INSTANCES)![1]);

it('a check the database does not answer (a half-open path) is given up after 5 s and told; the lock is taken again once the path is found dead', async () => {
  const lines: string[] = [];
  const instance = await registerInstance(pool, { checkMs: 100, log: (m) => lines.push(m) });
  proxy.stall();
  try {
    // Every connection of the pool hangs: the check gives up after its bound, and says so once.
    await expect
      .poll(() => lines.some((l) => l.includes('could not be checked')), { timeout: 12_000, interval: 100 })
      .toBe(true);
  } finally {
    proxy.flow();
  }
  // The path is found dead at last (TCP gives up): its connections close, and the lock is taken again.
  proxy.dropAll();
  proxy.accept();
  await expect.poll(() => live(instance.id), { timeout: 15_000, interval: 100 }).toBe(true);
  await expect
    .poll(() => lines.at(-1), { timeout: 5_000 })
    .toBe(`instance ${instance.id}: its lock is held again`);
  await instance.release();
  expect(await live(instance.id)).toBe(false);
}, 60_000);
