import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSession, upsertPlayer } from '../../src/auth/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { type FakeProvider, startFakeProvider } from '../support/fakeProvider.ts';
import { type ServerProcess, spawnServer } from '../support/process.ts';
import { readFrames } from '../support/sse.ts';

// A Conversation's sandbox files live in PostgreSQL: two server processes, each with a disk of its own.
let db: TestDatabase;
let fake: FakeProvider;
let a: ServerProcess;
let b: ServerProcess;
const dirs: string[] = [];
let cookie: string;
let conversationId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  fake = await startFakeProvider();
  await db.sql`update village_settings set default_provider = 'fake', default_model = 'fake-model'`;
  const player = await upsertPlayer(db.sql, 'did:plc:sandboxstore', 'sandboxstore.test');
  cookie = `av_session=${await createSession(db.sql, player.id)}`;
  const [npc] = await db.sql`insert into npcs (player_id, name) values (${player.id}, 'Ada') returning id`;
  await db.sql`insert into grants (npc_id, kind) values (${npc!.id}, 'sandbox')`;
  const [c] = await db.sql`insert into conversations (player_id) values (${player.id}) returning id`;
  conversationId = c!.id as string;
  await db.sql`insert into conversation_participants values (${conversationId}, ${npc!.id}, 0)`;
  // Each server's folder is made before the two start together: pushed as each mkdtemp resolved, dirs[0] could
  // be B's (two mkdtemps finish in either order), which is how this test once failed in CI.
  for (let i = 0; i < 2; i++) dirs.push(await mkdtemp(path.join(os.tmpdir(), 'av-sandbox-store-')));
  const start = (dir: string) =>
    spawnServer({
      DATABASE_URL: db.url,
      DATA_DIR: dir,
      COMPATIBLE_PROVIDERS: JSON.stringify([{ id: 'fake', baseURL: fake.baseURL }]),
      ATPROTO_NETWORK: 'public',
    });
  [a, b] = await Promise.all([start(dirs[0]!), start(dirs[1]!)]);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.kill(), b?.kill()]);
  await fake?.close();
  await db?.drop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** One turn on `server` whose reply runs `command` in the sandbox; returns the call's output. */
async function run(server: ServerProcess, command: string) {
  fake.enqueue(
    (r) => {
      r.toolCallStart(0, 'call_bash', 'bash', JSON.stringify({ command }));
      r.finish('tool_calls');
    },
    (r) => {
      r.text('Done.');
      r.finish();
    },
  );
  const res = await fetch(`${server.url}/api/conversations/${conversationId}/messages`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ text: `run ${command}` }),
  });
  expect(res.status).toBe(200);
  for await (const _ of readFrames(res)) {
    // to the end of the turn
  }
  const [row] = await db.sql<{ parts: { type: string; output?: { stdout: string; exitCode: number } }[] }[]>`
    select parts from messages where conversation_id = ${conversationId} and role = 'npc' order by seq desc limit 1`;
  return row!.parts.find((p) => p.type === 'tool')!.output!;
}

it('a file written by a command on one instance is there for the next command on another, and so are changes back', async () => {
  expect(await run(a, 'mkdir -p logs && echo kept > notes.txt && echo one > logs/day1.txt')).toMatchObject({
    exitCode: 0,
  });
  expect(await run(b, 'cat notes.txt logs/day1.txt')).toMatchObject({ stdout: 'kept\none\n', exitCode: 0 });
  // Changed and removed on B: A sees B's version, not its own stale copy.
  await run(b, 'echo changed > notes.txt && rm logs/day1.txt');
  expect(await run(a, 'cat notes.txt; ls logs')).toMatchObject({ stdout: 'changed\n' });
  const [version] =
    await db.sql`select version from sandbox_versions where conversation_id = ${conversationId}`;
  expect(Number(version!.version)).toBe(2);
  // A command that changes nothing writes nothing.
  await run(b, 'cat notes.txt');
  const [same] = await db.sql`select version from sandbox_versions where conversation_id = ${conversationId}`;
  expect(Number(same!.version)).toBe(2);

  // Deleting the Conversation takes its files' rows and bytes along, and each instance's working copy on request.
  const stored =
    await db.sql`select blob_id from sandbox_files where conversation_id = ${conversationId} and blob_id is not null`;
  expect(stored.length).toBe(1);
  const del = await fetch(`${a.url}/api/conversations/${conversationId}`, {
    method: 'DELETE',
    headers: { cookie, 'x-agentsville': '1' },
  });
  expect(del.status).toBe(204);
  expect((await db.sql`select 1 from blobs where id = ${stored[0]!.blob_id}`).length).toBe(0);
  expect(await readdir(path.join(dirs[0]!, 'sandboxes'))).toEqual([]);
  // B's working copy is swept as a leftover of a Conversation that is gone.
  expect((await readdir(path.join(dirs[1]!, 'sandboxes'))).length).toBeGreaterThan(0);
  const { sweepSandboxCopies } = await import('../../src/tools/index.ts');
  const { existingConversations } = await import('../../src/conversations/index.ts');
  expect(await sweepSandboxCopies(db.sql, dirs[1]!, existingConversations)).toBe(1);
  expect(await readdir(path.join(dirs[1]!, 'sandboxes'))).toEqual([]);
});
