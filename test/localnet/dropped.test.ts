import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
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

it('outlives PostgreSQL dropping every connection, the PLC pool’s idle ones too, and reads again after', async () => {
  expect(await plcReads()).toBe(200);
  // node-postgres names no application; postgres.js (ours) does. The PLC's connections are the unnamed ones.
  const dropped = await db.sql<{ plc: boolean }[]>`
    select application_name = '' as plc, pg_terminate_backend(pid) from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`;
  // The fault fired: at least one of the PLC's idle connections was among those dropped.
  expect(dropped.filter((d) => d.plc).length).toBeGreaterThan(0);
  // An unhandled 'error' from an idle connection would have ended the process by now.
  await new Promise((r) => setTimeout(r, 1_000));
  expect(server.child.exitCode, server.output()).toBeNull();
  expect(server.child.signalCode).toBeNull();
  expect(server.output()).toContain('a PLC database connection was dropped');
  // Both pools connect again: the PLC’s, and ours (readiness reads the database).
  expect(await plcReads()).toBe(200);
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
}, 60_000);
