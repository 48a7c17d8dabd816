import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

const json = async <T>(res: Response, status = 200): Promise<T> => {
  expect(res.status).toBe(status);
  return (await res.json()) as T;
};

describe('Conversations', () => {
  it('lists most recently active first, paged by cursor', async () => {
    const a = await setupConversation(app, cookie);
    const b = await setupConversation(app, cookie);
    const c = await setupConversation(app, cookie);
    // A turn in the oldest makes it the most recently active.
    await collectFrames(
      await app.api(`/api/conversations/${a.conversationId}/messages`, { cookie, body: { text: 'hi' } }),
    );
    const page1 = await json<{
      conversations: { id: string; title: string | null; npcIds: string[] }[];
      cursor: string;
    }>(await app.api('/api/conversations?limit=2', { cookie }));
    expect(page1.conversations.map((x) => x.id)).toEqual([a.conversationId, c.conversationId]);
    expect(page1.conversations[0]).toMatchObject({ title: 'hi', npcIds: a.npcIds });
    const page2 = await json<{ conversations: { id: string }[] }>(
      await app.api(`/api/conversations?limit=2&cursor=${page1.cursor}`, { cookie }),
    );
    expect(page2.conversations.map((x) => x.id)).toEqual([b.conversationId]);
  });

  it('a Party’s NPCs come in the order they joined, whole, on creating and reading it', async () => {
    const made = [];
    for (const npc of [
      { name: 'Ada', jobTitle: 'Librarian' },
      { name: 'Bo', jobTitle: 'Baker' },
    ])
      made.push(
        (await json<{ npc: { id: string } }>(await app.api('/api/npcs', { cookie, body: npc }), 201)).npc,
      );
    const [ada, bo] = made;
    const created = await json<{ conversation: { id: string }; participants: Record<string, unknown>[] }>(
      await app.api('/api/conversations', { cookie, body: { npcIds: [bo!.id, ada!.id] } }),
      201,
    );
    const expected = [
      expect.objectContaining({ id: bo!.id, name: 'Bo', jobTitle: 'Baker', createdAt: expect.any(String) }),
      expect.objectContaining({ id: ada!.id, name: 'Ada', jobTitle: 'Librarian' }),
    ];
    expect(created.participants).toEqual(expected);
    const read = await json<{ participants: Record<string, unknown>[] }>(
      await app.api(`/api/conversations/${created.conversation.id}`, { cookie }),
    );
    expect(read.participants).toEqual(expected);
  });

  it('lists each Conversation with its publication’s state, null when never published', async () => {
    // A Player of its own: the list is theirs alone.
    const { cookie: cookie2, did } = await app.signIn();
    const published = await setupConversation(app, cookie2);
    const failed = await setupConversation(app, cookie2);
    const never = await setupConversation(app, cookie2);
    for (const [c, status] of [
      [published, 'published'],
      [failed, 'failed'],
    ] as const)
      await app.db.sql`
        insert into publications (conversation_id, player_id, did, session_rkey, title, status)
        select id, player_id, ${did}, ${`rkey${status}`}, 'Published', ${status} from conversations
        where id = ${c.conversationId}`;
    const list = await json<{ conversations: { id: string; publication: string | null }[] }>(
      await app.api('/api/conversations', { cookie: cookie2 }),
    );
    expect(Object.fromEntries(list.conversations.map((c) => [c.id, c.publication]))).toEqual({
      [published.conversationId]: 'published',
      [failed.conversationId]: 'failed',
      [never.conversationId]: null,
    });
  });

  it('refuses a cursor it never gave out', async () => {
    const res = await app.api('/api/conversations?cursor=bm9wZQ', { cookie });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('INVALID_QUERY');
  });

  it("refuses an NPC that is not the Player's own", async () => {
    const other = await app.signIn();
    const { npcIds } = await setupConversation(app, other.cookie);
    const res = await app.api('/api/conversations', { cookie, body: { npcIds } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('UNKNOWN_NPC');
  });

  it('renames and deletes, scoped to the Player', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    const other = await app.signIn();
    expect(
      (
        await app.api(`/api/conversations/${conversationId}`, {
          method: 'PATCH',
          cookie: other.cookie,
          body: { title: 'x' },
        })
      ).status,
    ).toBe(404);
    const renamed = await json<{ conversation: { title: string } }>(
      await app.api(`/api/conversations/${conversationId}`, {
        method: 'PATCH',
        cookie,
        body: { title: ' Plans ' },
      }),
    );
    expect(renamed.conversation.title).toBe('Plans');
    expect(
      (await app.api(`/api/conversations/${conversationId}`, { method: 'DELETE', cookie: other.cookie }))
        .status,
    ).toBe(404);
    expect((await app.api(`/api/conversations/${conversationId}`, { method: 'DELETE', cookie })).status).toBe(
      204,
    );
    expect((await app.api(`/api/conversations/${conversationId}`, { cookie })).status).toBe(404);
  });

  it('pages Messages by cursor, oldest first within a page', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    for (let i = 0; i < 3; i++) {
      await collectFrames(
        await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: `q${i}` } }),
      );
    }
    const latest = await json<{ messages: { text: string; seq: string }[]; before: string }>(
      await app.api(`/api/conversations/${conversationId}?limit=4`, { cookie }),
    );
    expect(latest.messages.map((m) => m.text)).toEqual([
      'q1',
      'Hello from the fake Provider.',
      'q2',
      'Hello from the fake Provider.',
    ]);
    const older = await json<{ messages: { text: string }[]; before: string | null }>(
      await app.api(`/api/conversations/${conversationId}/messages?limit=4&before=${latest.before}`, {
        cookie,
      }),
    );
    expect(older.messages.map((m) => m.text)).toEqual(['q0', 'Hello from the fake Provider.']);
    expect(older.before).toBeNull();
  });

  it('reads rows written before Parts existed as one text Part', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    await app.db
      .sql`insert into messages (conversation_id, role, text) values (${conversationId}, 'player', 'legacy row')`;
    const body = await json<{ messages: { parts: unknown[] }[] }>(
      await app.api(`/api/conversations/${conversationId}`, { cookie }),
    );
    expect(body.messages[0]!.parts).toEqual([{ type: 'text', text: 'legacy row' }]);
  });
});

describe('a Conversation whose reply is being written', () => {
  it('cannot be deleted until the reply ends (it would go uncharged): 409, then 204', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    app.fake.enqueue(async (r) => {
      r.text('Still talking');
      await held;
      r.finish();
    });
    const res = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Hi' },
    });
    const frames = collectFrames(res);
    const busy = await app.api(`/api/conversations/${conversationId}`, { method: 'DELETE', cookie });
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as { error: { code: string } }).error.code).toBe('TURN_IN_PROGRESS');
    release();
    await frames;
    expect((await app.api(`/api/conversations/${conversationId}`, { method: 'DELETE', cookie })).status).toBe(
      204,
    );
  });
});

describe('NPCs', () => {
  it('are created with defaults, edited and deleted, scoped to their Player', async () => {
    const created = await json<{ npc: Record<string, unknown> & { id: string } }>(
      await app.api('/api/npcs', { cookie, body: { name: 'Mira' } }),
      201,
    );
    expect(created.npc).toMatchObject({
      name: 'Mira',
      jobTitle: '',
      provider: null,
      model: null,
      thinking: false,
    });
    const other = await app.signIn();
    expect((await app.api(`/api/npcs/${created.npc.id}`, { cookie: other.cookie })).status).toBe(404);
    const edited = await json<{ npc: Record<string, unknown> }>(
      await app.api(`/api/npcs/${created.npc.id}`, {
        method: 'PATCH',
        cookie,
        body: { jobTitle: 'Cartographer', thinking: true },
      }),
    );
    expect(edited.npc).toMatchObject({ name: 'Mira', jobTitle: 'Cartographer', thinking: true });
    // A field a PATCH leaves out keeps its value (no defaults sneak back in).
    await app.api(`/api/npcs/${created.npc.id}`, {
      method: 'PATCH',
      cookie,
      body: { prompt: 'Speak in rhyme.' },
    });
    const kept = await json<{ npc: Record<string, unknown> }>(
      await app.api(`/api/npcs/${created.npc.id}`, { method: 'PATCH', cookie, body: { name: 'Mira II' } }),
    );
    expect(kept.npc).toMatchObject({
      name: 'Mira II',
      jobTitle: 'Cartographer',
      thinking: true,
      prompt: 'Speak in rhyme.',
    });
    const list = await json<{ npcs: { id: string }[] }>(await app.api('/api/npcs', { cookie: other.cookie }));
    expect(list.npcs.map((n) => n.id)).not.toContain(created.npc.id);
    expect((await app.api(`/api/npcs/${created.npc.id}`, { method: 'DELETE', cookie })).status).toBe(204);
  });

  it('refuse a Provider this instance has no key for, and bad input, with a clear error', async () => {
    const res = await app.api('/api/npcs', { cookie, body: { name: 'X', provider: 'openai', model: 'gpt' } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('PROVIDER_NOT_CONFIGURED');
    expect(body.error.message).toContain('fake');
    const bad = await app.api('/api/npcs', { cookie, body: { name: '' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('INVALID_BODY');
  });
});

describe('Village settings', () => {
  it('are readable by any Player and changed only by an admin named by DID', async () => {
    const view = await json<{
      settings: Record<string, unknown>;
      providers: { id: string }[];
      isAdmin: boolean;
    }>(await app.api('/api/village', { cookie }));
    expect(view.settings).toEqual({
      defaultProvider: 'fake',
      defaultModel: 'fake-model',
      hopLimit: 6,
      historyBudget: 60000,
      sandboxQuotaMb: 100,
      turnsPerMinute: 20,
      concurrentStreams: 3,
      playerDailyTokens: 2_000_000,
      villageDailyTokens: 50_000_000,
      maxMessageChars: 20_000,
      maxNpcs: 100,
      maxConversations: 2000,
      maxAttachmentMb: 20,
      maxAttachmentsPerMessage: 10,
      playerAttachmentMb: 1024,
      attachmentTypes: [
        'image/png',
        'image/jpeg',
        'image/gif',
        'image/webp',
        'application/pdf',
        'text/plain',
        'text/markdown',
        'text/csv',
        'application/json',
      ],
      maxOutputTokens: null,
      playerStorageMb: 200,
    });
    expect(view.providers).toEqual([{ id: 'fake', kind: 'compatible' }]);
    expect(view.isAdmin).toBe(false);
    const refused = await app.api('/api/village', { method: 'PUT', cookie, body: { hopLimit: 3 } });
    expect(refused.status).toBe(403);
  });
});
