import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSession, upsertPlayer } from '../../src/auth/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { type FakeProvider, startFakeProvider } from '../support/fakeProvider.ts';
import { spawnServer } from '../support/process.ts';
import { readFrames } from '../support/sse.ts';

let db: TestDatabase;
let fake: FakeProvider;
beforeAll(async () => {
  db = await createTestDatabase();
  fake = await startFakeProvider();
  await db.sql`update village_settings set default_provider = 'fake', default_model = 'fake-model'`;
});
afterAll(async () => {
  await fake?.close();
  await db?.drop();
});

it('kill -9 mid-reply leaves the last checkpoint, marked interrupted when a server starts again', async () => {
  const env = {
    DATABASE_URL: db.url,
    COMPATIBLE_PROVIDERS: JSON.stringify([{ id: 'fake', baseURL: fake.baseURL }]),
    CHECKPOINT_MS: '100',
    ATPROTO_NETWORK: 'public',
  };
  const player = await upsertPlayer(db.sql, 'did:plc:crash', 'crash.test');
  const cookie = `av_session=${await createSession(db.sql, player.id)}`;
  const [npc] = await db.sql`insert into npcs (player_id, name) values (${player.id}, 'Ada') returning id`;
  const [conversation] =
    await db.sql`insert into conversations (player_id) values (${player.id}) returning id`;
  await db.sql`insert into conversation_participants values (${conversation!.id}, ${npc!.id}, 0)`;

  fake.enqueue(async (r) => {
    for (let i = 0; !r.clientGone && i < 1000; i++) {
      r.text(`w${i} `);
      await r.wait(10);
    }
  });
  const first = await spawnServer(env);
  const res = await fetch(`${first.url}/api/conversations/${conversation!.id}/messages`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'Talk for a while' }),
  });
  const frames = readFrames(res);
  await frames.next();
  // Wait for a checkpoint with some text in it, then kill the process outright.
  let checkpoint = '';
  for (let i = 0; i < 100 && checkpoint.length < 20; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const [row] = await db.sql`select text from messages where role = 'npc'`;
    checkpoint = row?.text ?? '';
  }
  expect(checkpoint.length).toBeGreaterThan(20);
  await first.kill('SIGKILL');
  await frames.return(undefined).catch(() => {});

  const [streaming] = await db.sql`select status, text from messages where role = 'npc'`;
  expect(streaming?.status).toBe('streaming');
  const lastCheckpoint = streaming!.text as string;
  expect(lastCheckpoint.startsWith(checkpoint)).toBe(true);

  const second = await spawnServer(env);
  try {
    const [after] = await db.sql`select status, text, error from messages where role = 'npc'`;
    expect(after).toMatchObject({ status: 'interrupted', text: lastCheckpoint });
    expect(after?.error).toMatch(/server stopped/);
    // The dead server's claim on the Conversation does not block the next turn.
    const next = await fetch(`${second.url}/api/conversations/${conversation!.id}/messages`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Are you back?' }),
    });
    expect(next.status).toBe(200);
    for await (const _ of readFrames(next)) {
      // drain
    }
  } finally {
    await second.kill();
  }
}, 60_000);
