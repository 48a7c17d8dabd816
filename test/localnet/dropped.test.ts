import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { plcDatabase } from '../../src/localnet/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { type ServerProcess, spawnServer } from '../support/process.ts';

// Offline mode's PLC keeps its own pool of PostgreSQL connections (node-postgres, inside @did-plc/server). When
// PostgreSQL drops them (a restart, a failover, idle_session_timeout, an operator's pg_terminate_backend), an
// idle one's error must not take the server down with it.

let db: TestDatabase;
let dataDir: string;
let server: ServerProcess;
let plcUrl: string;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'av-dropped-'));
  server = await spawnServer(
    { DATABASE_URL: db.url, DATA_DIR: dataDir, ATPROTO_NETWORK: 'local', HOST: '127.0.0.1' },
    { startTimeoutMs: 90_000 },
  );
  // Said in the lines after "listening".
  const said = /PLC (http:\/\/127\.0\.0\.1:\d+)/;
  for (let i = 0; i < 100 && !said.test(server.output()); i++) await new Promise((r) => setTimeout(r, 50));
  const m = said.exec(server.output());
  if (!m) throw new Error(`no PLC address in the server's output:\n${server.output()}`);
  plcUrl = m[1]!;
}, 120_000);
afterAll(async () => {
  await server?.kill('SIGKILL');
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Asks the PLC for its log: a read of its own tables, through its pool. */
const plcReads = async () => (await fetch(`${plcUrl}/export?count=1`)).status;

it('outlives PostgreSQL dropping every connection, the PLC pool’s idle and busy ones too, and reads again after', async () => {
  // The PLC's pool connected, and its tables read.
  expect(await Promise.all([plcReads(), plcReads()])).toEqual([200, 200]);
  // One of them made busy: a read waiting on a lock this test holds.
  const held = await db.sql.reserve();
  try {
    await held`begin`;
    await held`lock table plc.operations in access exclusive mode`;
    const [{ pid: heldPid }] = (await held`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
    const busy = plcReads().catch(() => 0);
    // Read outside a transaction: within one, pg_stat_activity is the snapshot its first read took.
    const waiting = async () => {
      const [w] = await db.sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'`;
      return w!.n;
    };
    for (let i = 0; i < 200 && !(await waiting()); i++) await new Promise((r) => setTimeout(r, 25));
    // With that connection busy, a read of no table takes another, idle after: the two reads above may have
    // shared one connection (one done before the other began, as on a loaded machine), leaving none idle here.
    expect((await fetch(`${plcUrl}/_health`)).status).toBe(200);
    // node-postgres names no application; postgres.js (ours) does. The PLC's connections are the unnamed ones.
    const dropped = await db.sql<{ plc: boolean; waiting: boolean }[]>`
      select application_name = '' as plc, wait_event_type is not distinct from 'Lock' as waiting,
        pg_terminate_backend(pid)
      from pg_stat_activity
      where datname = current_database() and pid not in (pg_backend_pid(), ${heldPid})
        and backend_type = 'client backend'`;
    // The faults fired: an idle connection of the PLC's and a busy one were among those dropped.
    expect(dropped.filter((d) => d.plc && !d.waiting).length).toBeGreaterThan(0);
    expect(dropped.filter((d) => d.plc && d.waiting).length).toBe(1);
    await held`rollback`;
    // The busy read failed with its connection, as an answer, not as the process's end.
    expect(await busy).toBe(500);
  } finally {
    held.release();
  }
  // An unhandled 'error' from a dropped connection would have ended the process by now.
  await new Promise((r) => setTimeout(r, 1_000));
  expect(server.child.exitCode, server.output()).toBeNull();
  expect(server.child.signalCode).toBeNull();
  expect(server.output()).toContain('a PLC database connection was dropped');
  // Both pools connect again: the PLC’s, and ours (readiness reads the database).
  expect(await plcReads()).toBe(200);
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
}, 60_000);

it('a connection dropped while lent out, between a transaction’s statements, is said, not fatal', async () => {
  const said: string[] = [];
  const plcDb = plcDatabase(db.url, (m) => said.push(m));
  // The kysely the PLC's database runs on (typed as the package's own).
  const k = plcDb.db as unknown as Kysely<Record<string, never>>;
  try {
    const tx = k.transaction().execute(async (t) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(t);
      // Idle in the transaction, lent out, while PostgreSQL drops it: no query of its own to fail.
      await db.sql`select pg_terminate_backend(${rows[0]!.pid})`;
      for (let i = 0; i < 200 && !said.length; i++) await new Promise((r) => setTimeout(r, 10));
      await sql`select 1`.execute(t);
    });
    await expect(tx).rejects.toThrow();
    expect(said).toEqual(['a PLC database connection was dropped; the next query opens another']);
    // The pool connects again.
    expect((await sql<{ n: number }>`select 1 as n`.execute(k)).rows).toEqual([{ n: 1 }]);
  } finally {
    await plcDb.close();
  }
});
