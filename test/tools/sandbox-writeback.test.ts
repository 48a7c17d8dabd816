import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { upsertPlayer } from '../../src/auth/index.ts';
import { conversationExistsSql } from '../../src/conversations/index.ts';
import { sandboxFolder, sandboxTools } from '../../src/tools/sandbox/host.ts';
import { SandboxStore } from '../../src/tools/sandbox/store.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// The write-back of a command's files is bounded (files and bytes) and stops when its command's time is up.
let db: TestDatabase;
let dir: string;
let playerId: string;
beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(path.join(os.tmpdir(), 'av-writeback-'));
  playerId = (await upsertPlayer(db.sql, 'did:plc:writeback', 'writeback.test')).id;
});
afterAll(async () => {
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

const conversation = async () => {
  const [c] = await db.sql<
    { id: string }[]
  >`insert into conversations (player_id) values (${playerId}) returning id`;
  return c!.id;
};
const stored = async (id: string) =>
  Number((await db.sql`select count(*)::int as n from sandbox_files where conversation_id = ${id}`)[0]!.n);

it('stops between batches when its signal aborts, and the next write-back takes the rest', async () => {
  const id = await conversation();
  const root = sandboxFolder(dir, id);
  await mkdir(root, { recursive: true });
  const store = new SandboxStore(db.sql, id, root, conversationExistsSql, playerId);
  await store.pull();
  for (let i = 0; i < 250; i++) await writeFile(path.join(root, `f${i}`), `file ${i}`);
  const stop = new AbortController();
  // Stopped once the first batch is in: the rows stop arriving.
  const watching = setInterval(async () => {
    if ((await stored(id)) > 0) stop.abort(new Error('time is up'));
  }, 5);
  await expect(store.push(stop.signal)).rejects.toThrow('time is up');
  clearInterval(watching);
  const after = await stored(id);
  expect(after).toBeGreaterThan(0);
  expect(after).toBeLessThan(250);
  await new Promise((r) => setTimeout(r, 300));
  expect(await stored(id)).toBe(after);
  // Nothing was lost from the working copy: the next write-back writes the rest.
  await store.push();
  expect(await stored(id)).toBe(250);
}, 60_000);

it('a command that changes more files than one may write back fails clearly and its changes are undone', async () => {
  const id = await conversation();
  const root = sandboxFolder(dir, id);
  const store = new SandboxStore(db.sql, id, root, conversationExistsSql, playerId);
  const tools = await sandboxTools(
    dir,
    id,
    { timeoutMs: 30_000, quotaBytes: 100 * 1024 * 1024, maxOutputBytes: 65_536, memoryMb: 128 },
    store,
    playerId,
  );
  const execute = tools.bash!.execute! as (input: unknown, options: unknown) => Promise<{ stdout: string }>;
  const run = (command: string) => execute({ command }, { toolCallId: 'x', messages: [] });
  await run('echo kept > kept.txt');
  expect(await stored(id)).toBe(1);
  await expect(run('mkdir many && for i in $(seq 1 1100); do echo $i > many/f$i; done')).rejects.toThrow(
    /changed 1,101 files .*at most 1,000 files.*undone/,
  );
  // The working copy is what PostgreSQL holds again: the earlier file, none of the refused ones.
  expect(await stored(id)).toBe(1);
  expect((await run('ls')).stdout.trim()).toBe('kept.txt');
  expect(await readdir(root)).toEqual(['kept.txt']);
}, 120_000);

it('a Conversation deleted meanwhile: the next pull removes the working copy and makes nothing again', async () => {
  const id = await conversation();
  const root = sandboxFolder(dir, id);
  await mkdir(root, { recursive: true });
  const store = new SandboxStore(db.sql, id, root, conversationExistsSql, playerId);
  await store.pull();
  await writeFile(path.join(root, 'notes.txt'), 'kept');
  await store.push();
  expect(await stored(id)).toBe(1);
  await db.sql`delete from conversations where id = ${id}`;
  await expect(store.pull()).rejects.toThrow('This Conversation has been deleted.');
  expect((await readdir(dir)).filter((f) => f.startsWith(id))).toEqual([]);
});
