import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

const post = (
  conversationId: string,
  init: { cookie?: string; body?: unknown; headers?: Record<string, string> },
) => app.api(`/api/conversations/${conversationId}/messages`, { method: 'POST', ...init });

async function expectError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  const body = (await res.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(10);
}

describe('refusals before the stream opens, in the seed order', () => {
  it('401 without a session, even when everything else is wrong too', async () => {
    await expectError(
      await post('not-a-uuid', { body: 'garbage{', headers: { 'content-type': 'text/plain' } }),
      401,
      'UNAUTHENTICATED',
    );
    await expectError(
      await post('not-a-uuid', { cookie: 'av_session=forged', body: { text: 'x' } }),
      401,
      'UNAUTHENTICATED',
    );
  });

  it('401 on both turn routes once the session has ended or expired (they read it with their first reads)', async () => {
    const player = await app.signIn();
    const { conversationId } = await setupConversation(app, player.cookie);
    const token = player.cookie.replace(/^av_session=/, '');
    const hash = (await import('node:crypto')).createHash('sha256').update(token).digest();
    await app.db.sql`update sessions set expires_at = now() - interval '1 second' where token_hash = ${hash}`;
    await expectError(
      await post(conversationId, { cookie: player.cookie, body: { text: 'hi' } }),
      401,
      'UNAUTHENTICATED',
    );
    const regenerate = (c: string) =>
      app.api(`/api/conversations/${conversationId}/regenerate`, { method: 'POST', cookie: c, body: {} });
    await expectError(await regenerate(player.cookie), 401, 'UNAUTHENTICATED');
    // A session signed out (its row gone), not only one expired.
    await app.db.sql`delete from sessions where token_hash = ${hash}`;
    await expectError(
      await post(conversationId, { cookie: player.cookie, body: { text: 'hi' } }),
      401,
      'UNAUTHENTICATED',
    );
    await expectError(await regenerate(player.cookie), 401, 'UNAUTHENTICATED');
    const [written] = await app.db
      .sql`select count(*)::int as n from messages where conversation_id = ${conversationId}`;
    expect(written!.n).toBe(0);
  });

  it('a blocked Player signing out while the turn reads gets 401, never a turn: the block is read with the session', async () => {
    const player = await app.signIn();
    const { conversationId } = await setupConversation(app, player.cookie);
    await app.db
      .sql`insert into player_blocks (player_id, reason, created_by) values (${player.playerId}, 'spam', 'admin')`;
    const token = player.cookie.replace(/^av_session=/, '');
    const hash = (await import('node:crypto')).createHash('sha256').update(token).digest();
    // The block's read waits behind a lock on its table; the session ends meanwhile (the Player signs out with
    // the same cookie), so the reads before it found the session and the block's read does not.
    const requests = () => app.fake.requests.length;
    const before = requests();
    let answer: Promise<Response> | undefined;
    await app.db.sql.begin(async (tx) => {
      await tx`lock table player_blocks in access exclusive mode`;
      answer = post(conversationId, { cookie: player.cookie, body: { text: 'hi' } });
      for (let i = 0; i < 200; i++) {
        const [waiting] = await app.db
          .sql`select count(*)::int as n from pg_locks l join pg_class c on c.oid = l.relation
          where c.relname = 'player_blocks' and not l.granted`;
        if (waiting!.n > 0) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      await app.db.sql`delete from sessions where token_hash = ${hash}`;
    });
    await expectError(await answer!, 401, 'UNAUTHENTICATED');
    expect(requests()).toBe(before);
    const [written] = await app.db
      .sql`select count(*)::int as n from messages where conversation_id = ${conversationId}`;
    expect(written!.n).toBe(0);
  });

  it('400 INVALID_BODY for a bad body before looking at the Conversation', async () => {
    // The Conversation does not exist either: the body is refused first.
    const missing = '00000000-0000-4000-8000-000000000000';
    await expectError(await post(missing, { cookie, body: { text: '' } }), 400, 'INVALID_BODY');
    await expectError(await post(missing, { cookie, body: { text: 'hi', extra: 1 } }), 400, 'INVALID_BODY');
    await expectError(await post(missing, { cookie, body: '{"text":' }), 400, 'INVALID_BODY');
  });

  it('400 INVALID_BODY for form and text/plain posts: the CSRF defence', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    await expectError(
      await post(conversationId, {
        cookie,
        body: 'text=hello',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      400,
      'INVALID_BODY',
    );
    await expectError(
      await post(conversationId, {
        cookie,
        body: '{"text":"hello"}',
        headers: { 'content-type': 'text/plain' },
      }),
      400,
      'INVALID_BODY',
    );
    expect(await messages(app, cookie, conversationId)).toEqual([]);
  });

  it("404 for another Player's Conversation, identical to one that does not exist", async () => {
    const { conversationId } = await setupConversation(app, cookie);
    const other = await app.signIn();
    const theirs = await post(conversationId, { cookie: other.cookie, body: { text: 'hi' } });
    const missing = await post('00000000-0000-4000-8000-000000000000', {
      cookie: other.cookie,
      body: { text: 'hi' },
    });
    expect(theirs.status).toBe(404);
    expect(await theirs.json()).toEqual(await missing.json());
    expect(await messages(app, cookie, conversationId)).toEqual([]);
  });

  it('400 NO_NPC when the Conversation has no NPC, before the Model is checked', async () => {
    const { conversationId, npcIds } = await setupConversation(app, cookie, [
      { name: 'Gone', provider: 'fake', model: 'x' },
    ]);
    await app.api(`/api/npcs/${npcIds[0]}`, { method: 'DELETE', cookie });
    await app.db.sql`update village_settings set default_provider = null, default_model = null`;
    try {
      await expectError(await post(conversationId, { cookie, body: { text: 'anyone?' } }), 400, 'NO_NPC');
    } finally {
      await app.db.sql`update village_settings set default_provider = 'fake', default_model = 'fake-model'`;
    }
    expect(await messages(app, cookie, conversationId)).toEqual([]);
  });

  it('400 MODEL_UNRESOLVED when neither the NPC nor the Village names a Model', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    await app.db.sql`update village_settings set default_provider = null, default_model = null`;
    try {
      await expectError(
        await post(conversationId, { cookie, body: { text: 'hi' } }),
        400,
        'MODEL_UNRESOLVED',
      );
    } finally {
      await app.db.sql`update village_settings set default_provider = 'fake', default_model = 'fake-model'`;
    }
    expect(await messages(app, cookie, conversationId)).toEqual([]);
  });

  it('400 PROVIDER_NOT_CONFIGURED when the NPC outlived its key, checked at every turn', async () => {
    const { conversationId, npcIds } = await setupConversation(app, cookie);
    // The key was removed from the instance after the NPC was made.
    await app.db.sql`update npcs set provider = 'anthropic', model = 'claude' where id = ${npcIds[0]!}`;
    await expectError(
      await post(conversationId, { cookie, body: { text: 'hi' } }),
      400,
      'PROVIDER_NOT_CONFIGURED',
    );
    expect(await messages(app, cookie, conversationId)).toEqual([]);
  });
});

describe('one turn at a time', () => {
  it('refuses a second turn in the same Conversation with 409 while the first streams', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    app.fake.enqueue(async (r) => {
      r.text('Thinking…');
      await gate;
      r.finish();
    });
    const first = await post(conversationId, { cookie, body: { text: 'first' } });
    expect(first.status).toBe(200);
    await expectError(
      await post(conversationId, { cookie, body: { text: 'second' } }),
      409,
      'TURN_IN_PROGRESS',
    );
    release();
    await collectFrames(first);
    // Free again once the first has finished.
    const third = await post(conversationId, { cookie, body: { text: 'third' } });
    expect(third.status).toBe(200);
    await collectFrames(third);
    expect((await messages(app, cookie, conversationId)).map((m) => m.text)).toEqual([
      'first',
      'Thinking…',
      'third',
      'Hello from the fake Provider.',
    ]);
  });
});

describe('the Player Message', () => {
  it('sets the title from the first Message once (at most 80 characters, whole words), and bumps updatedAt every turn', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    const long = `${'word '.repeat(30)}\nsecond line`;
    await collectFrames(await post(conversationId, { cookie, body: { text: long } }));
    const read = async () =>
      (
        (await (await app.api(`/api/conversations/${conversationId}`, { cookie })).json()) as {
          conversation: { title: string; updatedAt: string };
        }
      ).conversation;
    const one = await read();
    expect(one.title).toBe(`${'word '.repeat(16).trim()}…`);
    expect(one.title.length).toBeLessThanOrEqual(80);
    await collectFrames(await post(conversationId, { cookie, body: { text: 'Another question entirely' } }));
    const two = await read();
    expect(two.title).toBe(one.title);
    expect(new Date(two.updatedAt).getTime()).toBeGreaterThan(new Date(one.updatedAt).getTime());
  });
});

describe('regenerate', () => {
  it('replaces the trailing NPC reply without re-posting the Player Message', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    app.fake.enqueue((r) => {
      r.text('First answer.');
      r.finish();
    });
    await collectFrames(await post(conversationId, { cookie, body: { text: 'Question?' } }));
    const before = await messages(app, cookie, conversationId);
    app.fake.enqueue((r) => {
      r.text('Second answer.');
      r.finish();
    });
    const res = await app.api(`/api/conversations/${conversationId}/regenerate`, { cookie, body: {} });
    expect(res.status).toBe(200);
    const frames = await collectFrames(res);
    expect(frames[0]).toMatchObject({ type: 'start', playerMessageId: before[0]!.id });
    const after = await messages(app, cookie, conversationId);
    expect(after.map((m) => m.text)).toEqual(['Question?', 'Second answer.']);
    expect(after[0]!.id).toBe(before[0]!.id);
    // The Provider was asked the same question once more, with no duplicate of it.
    const sent = app.fake.requests.at(-1)!.body.messages.filter((m) => m.role === 'user');
    expect(sent.map((m) => m.content)).toEqual(['Question?']);
  });

  it('refuses when there is nothing to answer again', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    await expectError(
      await app.api(`/api/conversations/${conversationId}/regenerate`, { cookie, body: {} }),
      400,
      'NOTHING_TO_REGENERATE',
    );
  });
});
