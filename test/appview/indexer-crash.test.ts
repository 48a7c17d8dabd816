import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AtpAgent } from '@atproto/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { indexFailureSwitch } from '../support/faults.ts';
import { freePort } from '../support/ports.ts';
import { type ServerProcess, spawnServer } from '../support/process.ts';
import { writeSession, writeTurns } from '../support/records.ts';

let db: TestDatabase;
let dataDir: string;
const servers: ServerProcess[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'av-indexer-crash-'));
});
afterAll(async () => {
  for (const s of servers) await s.kill('SIGKILL');
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => Promise<boolean>, what: string, tries = 400) {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

it('storage failing mid-stream, then the indexer’s process killed: after a restart, 0 events lost, 0 doubled', async () => {
  const env = {
    DATABASE_URL: db.url,
    ATPROTO_NETWORK: 'local',
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    LOCALNET_PDS_PORT: String(await freePort()),
    LOCALNET_PLC_PORT: String(await freePort()),
  };
  const first = await spawnServer(env);
  servers.push(first);
  const options = (await (await fetch(`${first.url}/api/auth/options`)).json()) as {
    demoAccounts: { handle: string; password: string }[];
  };
  const bob = options.demoAccounts.find((a) => a.handle === 'bob.test')!;
  const agent = new AtpAgent({ service: `http://localhost:${env.LOCALNET_PDS_PORT}` });
  await agent.login({ identifier: bob.handle, password: bob.password });
  const did = agent.session!.did;

  // A real failure at the database, switched on while the turns are written.
  const failures = await indexFailureSwitch(db.sql);
  const uri = await writeSession(agent, did, 'Crash');
  await until(
    async () => (await db.sql`select 1 from index_sessions where uri = ${uri}`).length > 0,
    'the session',
  );
  await failures.on();
  await writeTurns(agent, did, uri, 30, 'k');
  // The fault fired (and was retried) before the process dies.
  await until(async () => (await failures.fired()) > 2, 'failures');
  await first.kill('SIGKILL');
  expect(await db.sql`select 1 from index_messages where session_uri = ${uri}`).toHaveLength(0);
  await failures.off();

  const second = await spawnServer(env);
  servers.push(second);
  await until(
    async () =>
      (await db.sql`select count(*)::int as n from index_messages where session_uri = ${uri}`)[0]!.n === 30,
    'all 30 turns after the restart',
  );
  const inIndex = (
    await db.sql`select uri, cid from index_messages where session_uri = ${uri} order by uri`
  ).map((r) => `${r.uri} ${r.cid}`);
  const reader = new AtpAgent({ service: `http://localhost:${env.LOCALNET_PDS_PORT}` });
  const inRepo = (
    await reader.com.atproto.repo.listRecords({
      repo: did,
      collection: 'click.aligned.chat.message',
      limit: 100,
    })
  ).data.records
    .filter((r) => (r.value as { session: string }).session === uri)
    .map((r) => `${r.uri} ${r.cid}`)
    .sort();
  expect(inRepo).toHaveLength(30);
  expect(inIndex).toEqual(inRepo);
  await second.kill();
}, 180_000);
