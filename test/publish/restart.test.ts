import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openBrowser, signInThroughPds } from '../support/browser.ts';
import { insertConversation } from '../support/conversations.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { freePort } from '../support/ports.ts';
import { type ServerProcess, spawnServer } from '../support/process.ts';
import { expectRepoToMatchPlan } from '../support/publication.ts';

let db: TestDatabase;
let dataDir: string;
const servers: ServerProcess[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'av-restart-'));
});
afterAll(async () => {
  for (const s of servers) await s.kill('SIGKILL');
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('a server killed mid-publication resumes from the stored plan when it starts again: no duplicate, no gap', async () => {
  // Offline mode in the server process itself: its own PLC and PDS, kept under DATA_DIR across the restart.
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
  const account = options.demoAccounts.find((a) => a.handle === 'alice.test')!;
  const browser = await openBrowser();
  let cookie: string;
  try {
    await signInThroughPds(browser.page, first.url, account.handle, account.password);
    await browser.page.waitForURL(`${first.url}/`);
    const token = (await browser.context.cookies(first.url)).find((c) => c.name === 'av_session')!.value;
    cookie = `av_session=${token}`;
  } finally {
    await browser.close();
  }
  const [player] = await db.sql`select id, did from players`;
  const { conversationId } = await insertConversation(db.sql, player!.id as string, {
    turns: Array.from({ length: 1000 }, (_, i) => ({
      role: i % 2 ? ('npc' as const) : ('player' as const),
      parts: [{ type: 'text', text: `Turn ${i} ${'words '.repeat(20)}` }],
    })),
  });

  const publishing = fetch(`${first.url}/api/conversations/${conversationId}/publication`, {
    method: 'PUT',
    headers: { cookie, 'content-type': 'application/json' },
    body: '{}',
  }).catch(() => null);
  // Kill -9 once some batches have landed and others are still to write.
  const progress = async () => {
    const [row] = await db.sql`select count(*) filter (where cid is not null)::int as written,
      count(*) filter (where pending is not null)::int as pending
      from publication_records where conversation_id = ${conversationId}`;
    return row as { written: number; pending: number };
  };
  for (let i = 0; i < 3000; i++) {
    const p = await progress();
    if (p.written > 0 && p.pending > 0) break;
    await sleep(5);
  }
  await first.kill('SIGKILL');
  await publishing;
  // The fault happened where it matters: part of the plan written, part still pending.
  const atKill = await progress();
  expect(atKill.written).toBeGreaterThan(0);
  expect(atKill.pending).toBeGreaterThan(0);
  const planned = await db.sql`select rkey, collection, record from publication_records
    where conversation_id = ${conversationId} order by position`;
  expect(planned).toHaveLength(1001);
  const [stuck] = await db.sql`select status from publications where conversation_id = ${conversationId}`;
  expect(stuck!.status).toBe('publishing');

  const second = await spawnServer(env);
  servers.push(second);
  let status = '';
  // The killed server's publication lease is had once it expires (one term, 45 s; ADR 0054), then the rest goes.
  for (let i = 0; i < 1500 && status !== 'published'; i++) {
    await sleep(100);
    const [row] = await db.sql`select status from publications where conversation_id = ${conversationId}`;
    status = row!.status as string;
  }
  expect(status).toBe('published');
  expect(
    await db.sql`select rkey, collection, record from publication_records
      where conversation_id = ${conversationId} order by position`,
  ).toEqual(planned);
  const [pub] =
    await db.sql`select did, session_rkey from publications where conversation_id = ${conversationId}`;
  await expectRepoToMatchPlan(
    { app: { db, running: { localnet: { pdsUrl: `http://localhost:${env.LOCALNET_PDS_PORT}` } } } },
    pub!.did as string,
    conversationId,
    `at://${pub!.did}/click.aligned.chat.session/${pub!.session_rkey}`,
  );
  await second.kill();
}, 300_000);
