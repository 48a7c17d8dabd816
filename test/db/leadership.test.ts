import { afterAll, beforeAll, expect, it } from 'vitest';
import { endHolding, holderNow, isBackend, tryTake } from '../../src/db/heldLock.ts';
import { connect, type Leadership, lead, type Sql } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { startPgProxy } from '../support/pgProxy.ts';

// ADR 0103: the indexer's and the labels' leader hold an advisory lock on a connection of their own. A database
// restart drops it with the server alive; the leader learns it through the pool, stops its work, and waits like
// any other server. A server that is not the leader keeps no connection while it waits.
let db: TestDatabase;
let proxy: Awaited<ReturnType<typeof startPgProxy>>;
let behind: Sql;
beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await startPgProxy(db.url);
  behind = connect(proxy.url, { max: 3 });
});
afterAll(async () => {
  await behind?.end({ timeout: 1 });
  await proxy?.close();
  await db?.drop();
});

let nextKey = 7_249_000;
const pidOf = async (key: number) => (await holderNow(db.sql, [key]))?.pid ?? null;
/** A leader of `key` on `sql`, counting the starts and stops of its work. */
function leader(sql: Sql, key: number) {
  const counts = { starts: 0, stops: 0, lines: [] as string[] };
  const leadership: Leadership = lead(sql, [key], {
    name: 'test',
    retryMs: 100,
    checkMs: 100,
    log: (m) => counts.lines.push(m),
    async start() {
      counts.starts++;
      return async () => {
        counts.stops++;
      };
    },
  });
  return Object.assign(counts, { leadership, working: () => counts.starts > counts.stops });
}

it('leads once across pools; the next takes over when the leader stops, and no lock stays behind', async () => {
  const key = nextKey++;
  const a = leader(db.sql, key);
  await a.leadership.leading;
  const b = leader(behind, key);
  await new Promise((r) => setTimeout(r, 500));
  expect(b.starts).toBe(0);
  // Waiting, it holds no connection: the pool behind the proxy has all of its own free.
  const reserved = await Promise.all([behind.reserve(), behind.reserve(), behind.reserve()]);
  for (const r of reserved) r.release();
  await a.leadership.stop();
  expect(a.stops).toBe(1);
  await b.leadership.leading;
  await b.leadership.stop();
  expect(b.stops).toBe(1);
  expect(await pidOf(key)).toBeNull();
}, 30_000);

it('a leader whose lock a restart dropped, and another server took, stops its work; it leads again once freed', async () => {
  const key = nextKey++;
  const a = leader(behind, key);
  await a.leadership.leading;
  const b = leader(db.sql, key);
  proxy.dropAll();
  // Its lock gone with its connection, the other server takes it.
  await b.leadership.leading;
  expect(b.working()).toBe(true);
  proxy.accept();
  await expect.poll(() => a.stops, { timeout: 15_000, interval: 50 }).toBe(1);
  expect(a.lines.some((l) => l.includes('lost with its connection'))).toBe(true);
  expect(a.working()).toBe(false);
  await b.leadership.stop();
  // The waiting server, behind the restarted database, takes over.
  await expect.poll(() => a.starts, { timeout: 15_000, interval: 50 }).toBe(2);
  expect(await pidOf(key)).not.toBeNull();
  await a.leadership.stop();
  expect(a.stops).toBe(2);
  expect(await pidOf(key)).toBeNull();
}, 60_000);

it('a leader alone leads again after a restart, under a lock held by its new connection', async () => {
  const key = nextKey++;
  const a = leader(behind, key);
  await a.leadership.leading;
  const before = await pidOf(key);
  proxy.dropAll();
  await expect.poll(() => pidOf(key), { timeout: 10_000, interval: 50 }).toBeNull();
  proxy.accept();
  await expect.poll(() => a.starts, { timeout: 15_000, interval: 50 }).toBe(2);
  expect(a.stops).toBe(1);
  const after = await pidOf(key);
  expect(after).not.toBeNull();
  expect(after).not.toBe(before);
  await a.leadership.stop();
  expect(await pidOf(key)).toBeNull();
}, 60_000);

it('a server waiting for the lock across a restart neither crashes nor stops asking', async () => {
  const key = nextKey++;
  const a = leader(db.sql, key);
  await a.leadership.leading;
  const b = leader(behind, key);
  await new Promise((r) => setTimeout(r, 300));
  proxy.dropAll();
  await new Promise((r) => setTimeout(r, 500));
  proxy.accept();
  await new Promise((r) => setTimeout(r, 500));
  await a.leadership.stop();
  await b.leadership.leading;
  expect(b.working()).toBe(true);
  await b.leadership.stop();
  expect(await pidOf(key)).toBeNull();
}, 60_000);

it('never writes to its connection once it closed on this side: its stop ends the backend left holding the lock', async () => {
  const key = nextKey++;
  const a = leader(behind, key);
  await a.leadership.leading;
  proxy.dropClients();
  // The backend lives on, holding the lock: the leader goes on leading.
  await new Promise((r) => setTimeout(r, 500));
  expect(a.working()).toBe(true);
  await a.leadership.stop();
  await expect.poll(() => pidOf(key), { timeout: 5_000, interval: 100 }).toBeNull();
  expect((await behind`select 1 as one`)[0]!.one).toBe(1);
}, 60_000);

it("a backend is known by its pid and its start: the same pid of another start is not this lock's holder", async () => {
  const key = nextKey++;
  const taken = await tryTake(db.sql, [key]);
  expect(taken).toBeDefined();
  const holder = await holderNow(db.sql, [key]);
  expect(isBackend(holder, taken!)).toBe(true);
  // Told the same by a session of another TimeZone (a timestamp's text is the session's).
  const tokyo = await db.sql.reserve();
  try {
    await tokyo`set timezone = 'Asia/Tokyo'`;
    expect(isBackend(await holderNow(tokyo as unknown as Sql, [key]), taken!)).toBe(true);
  } finally {
    tokyo.release();
  }
  // A new pid namespace after a restart can give another server's backend this pid.
  const other = { pid: taken!.pid, started: '978307200000000' };
  expect(isBackend(holder, other)).toBe(false);
  // Nor is it ended for one: only the backend that took it.
  await endHolding(db.sql, [key], other);
  expect(await pidOf(key)).toBe(taken!.pid);
  await endHolding(db.sql, [key], taken!);
  expect(await pidOf(key)).toBeNull();
});

it('a work that fails to start is told once, lets the lock go, and is started again later, waiting longer each time', async () => {
  const key = nextKey++;
  const lines: string[] = [];
  const starts: number[] = [];
  const leadership = lead(db.sql, [key], {
    name: 'test',
    retryMs: 100,
    checkMs: 100,
    log: (m) => lines.push(m),
    async start() {
      starts.push(performance.now());
      if (starts.length <= 3) throw new Error('not yet');
      return async () => {};
    },
  });
  // Waiting after its third failure (800 ms), it holds no lock: another server may lead meanwhile.
  await expect.poll(() => starts.length, { timeout: 10_000, interval: 10 }).toBe(3);
  await expect.poll(() => pidOf(key), { timeout: 700, interval: 20 }).toBeNull();
  expect(starts.length).toBe(3);
  await leadership.leading;
  expect(starts.length).toBe(4);
  expect(lines.filter((l) => l.includes('failed to start'))).toHaveLength(1);
  // Each wait twice the one before (200, 400, 800 ms), past what letting the lock go takes.
  const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
  expect(gaps[1]! - gaps[0]!).toBeGreaterThan(150);
  expect(gaps[2]! - gaps[1]!).toBeGreaterThan(300);
  await leadership.stop();
  expect(await pidOf(key)).toBeNull();
});
