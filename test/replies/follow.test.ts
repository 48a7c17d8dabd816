import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, upsertPlayer } from '../../src/auth/index.ts';
import { type Frame, foldParts } from '../../src/parts/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { type FakeProvider, startFakeProvider } from '../support/fakeProvider.ts';
import { type ServerProcess, spawnServer } from '../support/process.ts';
import { readFrames } from '../support/sse.ts';

// Replies followed and stopped across real server processes on one PostgreSQL (issue 17, ADR 0037).
let db: TestDatabase;
let fake: FakeProvider;
let a: ServerProcess;
let b: ServerProcess;
let cookie: string;
let playerId: string;
let npcId: string;
const env = () => ({
  DATABASE_URL: db.url,
  COMPATIBLE_PROVIDERS: JSON.stringify([{ id: 'fake', baseURL: fake.baseURL }]),
  CHECKPOINT_MS: '100',
  ATPROTO_NETWORK: 'public',
});

beforeAll(async () => {
  db = await createTestDatabase();
  fake = await startFakeProvider();
  await db.sql`update village_settings set default_provider = 'fake', default_model = 'fake-model'`;
  const player = await upsertPlayer(db.sql, 'did:plc:follow', 'follow.test');
  playerId = player.id;
  cookie = `av_session=${await createSession(db.sql, player.id)}`;
  [{ id: npcId }] =
    (await db.sql`insert into npcs (player_id, name) values (${player.id}, 'Ada') returning id`) as [
      { id: string },
    ];
  [a, b] = await Promise.all([spawnServer(env()), spawnServer(env())]);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.kill(), b?.kill()]);
  await fake?.close();
  await db?.drop();
});

async function conversation(): Promise<string> {
  const [c] = await db.sql`insert into conversations (player_id) values (${playerId}) returning id`;
  await db.sql`insert into conversation_participants values (${c!.id}, ${npcId}, 0)`;
  return c!.id as string;
}

/** Reads a stream's frames in the background; `until` resolves when a frame matches. */
function collect(res: Response) {
  const frames: Frame[] = [];
  const waiters: { test: (f: Frame[]) => boolean; resolve: () => void }[] = [];
  const done = (async () => {
    for await (const frame of readFrames(res)) {
      frames.push(frame);
      for (const w of waiters.splice(0)) (w.test(frames) ? w.resolve : () => waiters.push(w))();
    }
  })();
  // A stream whose server is killed ends in a socket error: the frames read until then are what counts.
  done.catch(() => {});
  return {
    frames,
    done,
    until: (test: (f: Frame[]) => boolean) =>
      test(frames) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ test, resolve })),
  };
}

const partsOf = (frames: Frame[]) => foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])));
const send = (server: ServerProcess, conversationId: string, text: string) =>
  fetch(`${server.url}/api/conversations/${conversationId}/messages`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
const follow = (server: ServerProcess, conversationId: string, messageId: string) =>
  fetch(`${server.url}/api/conversations/${conversationId}/messages/${messageId}/stream`, {
    headers: { cookie },
  });
const stored = async (messageId: string) => {
  const [row] = await db.sql<{ status: string; text: string; parts: unknown }[]>`
    select status, text, parts from messages where id = ${messageId}`;
  return row!;
};
const replyOf = (frames: Frame[]) =>
  (frames.find((f) => f.type === 'start') as Extract<Frame, { type: 'start' }>).messageId;

describe('a turn on one server after another changed its NPC (ADR 0093)', () => {
  it('A answers with the Model B gave the NPC since A’s last turn: nothing A read before is believed', async () => {
    const [{ id: bea }] = (await db.sql`insert into npcs (player_id, name, provider, model)
      values (${playerId}, 'Bea', 'fake', 'model-one') returning id`) as [{ id: string }];
    const [c] = await db.sql`insert into conversations (player_id) values (${playerId}) returning id`;
    await db.sql`insert into conversation_participants values (${c!.id}, ${bea}, 0)`;
    const turnOn = async (server: ServerProcess) => {
      fake.enqueue((r) => {
        r.text('Yes.');
        r.finish();
      });
      const turn = collect(await send(server, c!.id as string, 'Go on.'));
      await turn.done;
      const start = turn.frames.find((f) => f.type === 'start') as Extract<Frame, { type: 'start' }>;
      return { model: start.model, asked: (fake.requests.at(-1)!.body as { model: string }).model };
    };
    expect(await turnOn(a)).toEqual({ model: 'model-one', asked: 'model-one' });
    expect(await turnOn(a)).toEqual({ model: 'model-one', asked: 'model-one' });
    const patched = await fetch(`${b.url}/api/npcs/${bea}`, {
      method: 'PATCH',
      headers: { cookie, 'content-type': 'application/json', 'x-agentsville': '1' },
      body: JSON.stringify({ model: 'model-two' }),
    });
    expect(patched.status).toBe(200);
    expect(await turnOn(a)).toEqual({ model: 'model-two', asked: 'model-two' });
    const models = await db.sql`select model from messages where conversation_id = ${c!.id} and role = 'npc'
      order by seq`;
    expect(models.map((m) => m.model)).toEqual(['model-one', 'model-one', 'model-two']);
  });
});

describe('following a reply from anywhere', () => {
  it('a reply written by A is followed from B and from A mid-reply: no gap, no duplicate, equal to what is stored', async () => {
    const conversationId = await conversation();
    const words = Array.from({ length: 80 }, (_, i) => `w${i} `);
    fake.enqueue(async (r) => {
      r.reasoning('Counting. ');
      for (const w of words) {
        r.text(w);
        await r.wait(15);
      }
      r.finish();
    });
    const origin = collect(await send(a, conversationId, 'Count to eighty'));
    await origin.until((f) => f.filter((x) => x.type === 'part').length >= 15);
    const messageId = replyOf(origin.frames);
    const [there, here] = await Promise.all([
      follow(b, conversationId, messageId),
      follow(a, conversationId, messageId),
    ]);
    expect(there.status).toBe(200);
    const fromB = collect(there);
    const fromA = collect(here);
    // Live, not replayed at the end: both followers have frames while the reply is still being written.
    await Promise.all([fromB.until((f) => f.length >= 3), fromA.until((f) => f.length >= 3)]);
    expect(origin.frames.some((f) => f.type === 'finish')).toBe(false);
    await Promise.all([origin.done, fromB.done, fromA.done]);
    const row = await stored(messageId);
    expect(row.status).toBe('complete');
    expect(row.text).toBe(words.join(''));
    for (const viewer of [origin, fromB, fromA]) {
      expect(partsOf(viewer.frames)).toEqual(row.parts);
      expect(viewer.frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
    }
    // B joined mid-reply: it started from a snapshot, not from the first word alone.
    expect(fromB.frames[0]).toMatchObject({ type: 'start', messageId });
    // A reply that has ended is followed from its row, on any instance.
    const after = collect(await follow(b, conversationId, messageId));
    await after.done;
    expect(partsOf(after.frames)).toEqual(row.parts);
  });

  it('Stop from B stops the reply on A; what was produced is kept, and A’s viewer reads to the stopped end', async () => {
    const conversationId = await conversation();
    fake.enqueue(async (r) => {
      for (let i = 0; i < 2000 && !r.clientGone; i++) {
        r.text(`s${i} `);
        await r.wait(10);
      }
      r.finish();
    });
    const origin = collect(await send(a, conversationId, 'Talk'));
    await origin.until((f) => f.filter((x) => x.type === 'part').length >= 10);
    const messageId = replyOf(origin.frames);
    // Following is bounded per Player on each instance: 12 streams, then 429.
    const held = await Promise.all(Array.from({ length: 12 }, () => follow(b, conversationId, messageId)));
    expect(held.map((r) => r.status)).toEqual(Array(12).fill(200));
    const refused = await follow(b, conversationId, messageId);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('TOO_MANY_FOLLOWERS');
    for (const r of held) await r.body?.cancel();
    const stop = await fetch(`${b.url}/api/conversations/${conversationId}/messages/${messageId}/stop`, {
      method: 'POST',
      headers: { cookie, 'x-agentsville': '1' },
    });
    expect(stop.status).toBe(200);
    expect(await stop.json()).toEqual({ status: 'stopped' });
    await origin.done;
    const row = await stored(messageId);
    expect(row.status).toBe('stopped');
    expect(origin.frames.at(-1)).toMatchObject({ type: 'finish', status: 'stopped' });
    expect(partsOf(origin.frames)).toEqual(row.parts);
    expect(row.text.length).toBeGreaterThan(0);
    // Another Player cannot stop or follow it.
    const other = await upsertPlayer(db.sql, 'did:plc:other', 'other.test');
    const theirs = `av_session=${await createSession(db.sql, other.id)}`;
    const theirsRefused = await fetch(
      `${b.url}/api/conversations/${conversationId}/messages/${messageId}/stream`,
      {
        headers: { cookie: theirs },
      },
    );
    expect(theirsRefused.status).toBe(404);
  });

  it('a server told to stop (SIGTERM) says it is not ready, ends its replies as interrupted with what arrived stored, and its viewers see that end', async () => {
    const c = await spawnServer(env());
    expect(await (await fetch(`${c.url}/readyz`)).json()).toEqual({
      ready: true,
      database: true,
      draining: false,
    });
    const conversationId = await conversation();
    fake.enqueue(async (r) => {
      for (let i = 0; i < 5000 && !r.clientGone; i++) {
        r.text(`t${i} `);
        await r.wait(10);
      }
    });
    const origin = collect(await send(c, conversationId, 'Go on'));
    await origin.until((f) => f.filter((x) => x.type === 'part').length >= 10);
    const messageId = replyOf(origin.frames);
    const viewer = collect(await follow(b, conversationId, messageId));
    await viewer.until((f) => f.filter((x) => x.type === 'part').length >= 2);
    await c.kill('SIGTERM');
    await Promise.all([origin.done, viewer.done]);
    const row = await stored(messageId);
    expect(row.status).toBe('interrupted');
    expect(row.text.length).toBeGreaterThan(0);
    expect(origin.frames.at(-1)).toMatchObject({ type: 'finish', status: 'interrupted' });
    expect(partsOf(origin.frames)).toEqual(row.parts);
    expect(viewer.frames.at(-1)).toMatchObject({ type: 'finish', status: 'interrupted' });
  }, 30_000);

  it('kill -9 of the writing server: a viewer on B gets an interrupted end within seconds, not a hang', async () => {
    const conversationId = await conversation();
    fake.enqueue(async (r) => {
      for (let i = 0; i < 5000 && !r.clientGone; i++) {
        r.text(`k${i} `);
        await r.wait(10);
      }
    });
    const origin = collect(await send(a, conversationId, 'Go on'));
    await origin.until((f) => f.filter((x) => x.type === 'part').length >= 10);
    const messageId = replyOf(origin.frames);
    const viewer = collect(await follow(b, conversationId, messageId));
    await viewer.until((f) => f.filter((x) => x.type === 'part').length >= 3);
    await a.kill('SIGKILL');
    await viewer.done;
    expect(viewer.frames.at(-1)).toMatchObject({ type: 'finish', status: 'interrupted' });
    const row = await stored(messageId);
    expect(row.status).toBe('interrupted');
  }, 30_000);
});
