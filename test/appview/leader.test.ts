import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { AtpAgent } from '@atproto/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { writeSession, writeTurns } from '../support/records.ts';

// The firehose indexer runs on one leader across processes; a leader killed outright is replaced within seconds
// and no event is lost or doubled (issue 17).
let local: LocalApp;
const children: ChildProcess[] = [];
beforeAll(async () => {
  local = await startLocalApp();
  // The app's own indexer steps aside: the two processes below compete for leadership.
  await local.app.running.indexer?.stop();
}, 120_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await local?.close();
});

function indexerProcess() {
  const net = local.app.running.localnet!;
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.resolve(import.meta.dirname, '../support/indexerProcess.ts'),
      local.app.db.url,
      net.pdsUrl.replace(/^http/, 'ws'),
      net.plcUrl,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  const leading = new Promise<number>((resolve) =>
    child.stdout!.on('data', (d: Buffer) => {
      if (String(d).includes('leading')) resolve(performance.now());
    }),
  );
  return { child, leading };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => Promise<boolean>, what: string, tries = 300) {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

it('a leader killed with SIGKILL is replaced within seconds by the other process; nothing is lost or doubled', async () => {
  const net = local.app.running.localnet!;
  const bob = net.accounts.find((a) => a.handle === 'bob.test')!;
  const agent = new AtpAgent({ service: net.pdsUrl });
  await agent.login({ identifier: bob.handle, password: bob.password });
  const did = agent.session!.did;
  const sql = local.app.db.sql;
  const count = async (uri: string) =>
    (await sql<{ n: number }[]>`select count(*)::int as n from index_messages where session_uri = ${uri}`)[0]!
      .n;

  const a = indexerProcess();
  const b = indexerProcess();
  const first = await Promise.race([a.leading.then(() => a), b.leading.then(() => b)]);
  const other = first === a ? b : a;
  const uri = await writeSession(agent, did, 'Leadership');
  await writeTurns(agent, did, uri, 10, 'before');
  await until(async () => (await count(uri)) === 10, 'the first ten turns');

  const killedAt = performance.now();
  first.child.kill('SIGKILL');
  await writeTurns(agent, did, uri, 10, 'after');
  const tookOver = await other.leading;
  // Within seconds: the lock is PostgreSQL's, dropped with the dead process's connection.
  expect(tookOver - killedAt).toBeLessThan(10_000);
  // The new leader connects to the event stream first (with backoff when the PDS is slow to answer, as on a
  // loaded CI machine), then replays from the stored cursor.
  await until(async () => (await count(uri)) === 20, 'all twenty turns', 900);
  const texts = (
    await sql<
      { t: string }[]
    >`select record->>'text' as t from index_messages where session_uri = ${uri} order by rkey`
  ).map((r) => r.t);
  expect(texts).toEqual([
    ...Array.from({ length: 10 }, (_, i) => `before${i}`),
    ...Array.from({ length: 10 }, (_, i) => `after${i}`),
  ]);
}, 180_000);
