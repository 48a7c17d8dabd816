import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { sendAndStop, settled, setupConversation } from '../support/turns.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
}, 60_000);
afterAll(() => app?.close());
beforeEach(async () => {
  // Generous defaults; each test narrows the one limit it is about.
  await app.db.sql`update village_settings set turns_per_minute = 1000, concurrent_streams = 1000,
    player_daily_tokens = 1000000000, village_daily_tokens = 100000000000, max_message_chars = 100000,
    max_npcs = 1000, max_conversations = 1000`;
});

const streamingRequests = () => app.fake.requests.filter((r) => r.body.stream).length;
const send = (cookie: string, conversationId: string, text = 'Hello') =>
  app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text } });
const quick = (r: Reply) => {
  r.text('ok');
  r.finish('stop', { prompt_tokens: 5, completion_tokens: 3 });
};

describe('spending limits per Player, before any Provider call', () => {
  it('25 turns sent at once with 3 streams allowed: 3 reach the Provider, the rest get 429 with Retry-After', async () => {
    await app.db.sql`update village_settings set concurrent_streams = 3`;
    const { cookie } = await app.signIn();
    const conversations = await Promise.all(
      Array.from({ length: 25 }, () => setupConversation(app, cookie).then((c) => c.conversationId)),
    );
    // Each accepted reply stays open until the test has seen every answer.
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    // Scripts for exactly the 3 that may reach the Provider: a fourth would find none and fail the test.
    for (let i = 0; i < 3; i++)
      app.fake.enqueue(async (r: Reply) => {
        await held;
        quick(r);
      });
    const before = streamingRequests();
    const answers = await Promise.all(conversations.map((id) => send(cookie, id, 'x'.repeat(100_000))));
    const refused = answers.filter((a) => a.status === 429);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(3);
    expect(refused).toHaveLength(22);
    for (const a of refused) {
      expect(a.headers.get('retry-after')).toBe('5');
      expect(((await a.json()) as { error: { code: string } }).error.code).toBe('TOO_MANY_STREAMS');
    }
    release();
    await Promise.all(answers.filter((a) => a.status === 200).map((a) => collectFrames(a)));
    expect(streamingRequests() - before).toBe(3);
  }, 60_000);

  it('turns per minute: the one over is refused with how long to wait, and never reaches the Provider', async () => {
    await app.db.sql`update village_settings set turns_per_minute = 2`;
    const { cookie } = await app.signIn();
    const { conversationId } = await setupConversation(app, cookie);
    for (let i = 0; i < 2; i++) {
      app.fake.enqueue(quick);
      expect((await collectFrames(await send(cookie, conversationId))).at(-1)?.type).toBe('finish');
    }
    const before = streamingRequests();
    const third = await send(cookie, conversationId);
    expect(third.status).toBe(429);
    expect(((await third.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMITED');
    const wait = Number(third.headers.get('retry-after'));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(streamingRequests()).toBe(before);
    // Another Player is not held up by this one.
    const other = await app.signIn();
    const theirs = await setupConversation(app, other.cookie);
    app.fake.enqueue(quick);
    expect((await send(other.cookie, theirs.conversationId)).status).toBe(200);
  }, 60_000);

  it('a daily token budget, the Player’s and the Village’s, refuses until midnight UTC', async () => {
    const { cookie } = await app.signIn();
    const { conversationId } = await setupConversation(app, cookie);
    app.fake.enqueue(quick);
    await collectFrames(await send(cookie, conversationId));
    await app.db.sql`update village_settings set player_daily_tokens = 8`;
    const mine = await send(cookie, conversationId);
    expect(mine.status).toBe(429);
    expect(((await mine.json()) as { error: { code: string } }).error.code).toBe('TOKEN_BUDGET');
    const untilMidnight = Math.ceil((Date.UTC(...todayUtc(), 24) - Date.now()) / 1000);
    expect(Math.abs(Number(mine.headers.get('retry-after')) - untilMidnight)).toBeLessThanOrEqual(5);

    await app.db.sql`update village_settings set player_daily_tokens = 1000000000, village_daily_tokens = 8`;
    const other = await app.signIn();
    const theirs = await setupConversation(app, other.cookie);
    const village = await send(other.cookie, theirs.conversationId);
    expect(village.status).toBe(429);
    expect(((await village.json()) as { error: { code: string } }).error.code).toBe('VILLAGE_TOKEN_BUDGET');
  }, 60_000);

  it('a Message over the Village’s size is a 400, and nothing is written', async () => {
    await app.db.sql`update village_settings set max_message_chars = 10`;
    const { cookie } = await app.signIn();
    const { conversationId } = await setupConversation(app, cookie);
    const res = await send(cookie, conversationId, 'eleven chars');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('MESSAGE_TOO_LONG');
    expect(await app.db.sql`select 1 from messages where conversation_id = ${conversationId}`).toHaveLength(
      0,
    );
  });

  it('NPCs and Conversations are counted, even when created all at once', async () => {
    await app.db.sql`update village_settings set max_npcs = 5, max_conversations = 4`;
    const { cookie, playerId } = await app.signIn();
    const npcs = await Promise.all(
      Array.from({ length: 12 }, (_, i) => app.api('/api/npcs', { cookie, body: { name: `N${i}` } })),
    );
    expect(npcs.filter((r) => r.status === 201)).toHaveLength(5);
    const over = npcs.find((r) => r.status === 429)!;
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe('TOO_MANY_NPCS');
    const [npc] = await app.db.sql`select id from npcs where player_id = ${playerId} limit 1`;
    const made = await Promise.all(
      Array.from({ length: 10 }, () =>
        app.api('/api/conversations', { cookie, body: { npcIds: [npc!.id] } }),
      ),
    );
    expect(made.filter((r) => r.status === 201)).toHaveLength(4);
    expect(made.filter((r) => r.status === 429)).toHaveLength(6);
  });
});

describe('what was spent cannot be undone', () => {
  it('a regenerate is a turn, and deleting a Conversation gives no tokens back', async () => {
    await app.db.sql`update village_settings set turns_per_minute = 2`;
    const { cookie } = await app.signIn();
    const { conversationId } = await setupConversation(app, cookie);
    app.fake.enqueue(quick, quick);
    await collectFrames(await send(cookie, conversationId));
    const again = await app.api(`/api/conversations/${conversationId}/regenerate`, { cookie, body: {} });
    expect(again.status).toBe(200);
    await collectFrames(again);
    const third = await send(cookie, conversationId);
    expect(third.status).toBe(429);

    await app.db.sql`update village_settings set turns_per_minute = 1000, player_daily_tokens = 16`;
    // Two replies of 8 tokens were spent; the Conversation (and its replies) goes; the day's spend stays.
    expect((await app.api(`/api/conversations/${conversationId}`, { method: 'DELETE', cookie })).status).toBe(
      204,
    );
    const fresh = await setupConversation(app, cookie);
    const refused = await send(cookie, fresh.conversationId);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('TOKEN_BUDGET');

    // Usage counts both replies, the regenerated-away one and the one deleted with its Conversation.
    const usage = (await (await app.api('/api/usage?by=conversation&days=1', { cookie })).json()) as {
      points: { key: string; label: string; replies: number; inputTokens: number; outputTokens: number }[];
      totals: { replies: number; inputTokens: number; outputTokens: number };
    };
    const gone = usage.points.find((p) => p.key === conversationId);
    expect(gone?.replies).toBe(2);
    expect(usage.totals.inputTokens + usage.totals.outputTokens).toBe(16);
  });

  it('a reply stopped before the Provider reports usage is charged an estimate of what was sent', async () => {
    const { cookie, playerId } = await app.signIn();
    const { conversationId } = await setupConversation(app, cookie);
    app.fake.enqueue(async (r: Reply) => {
      for (let i = 0; i < 200 && !r.clientGone; i++) {
        r.text('word ');
        await r.wait(10);
      }
    });
    await sendAndStop(app, cookie, conversationId, 'x'.repeat(4000), (f) => f.some((x) => x.type === 'part'));
    const [reply] = (await settled(app, cookie, conversationId)).slice(-1);
    expect(reply?.status).toBe('stopped');
    expect(reply?.usage).toBeNull();
    const [spent] = await app.db.sql`select tokens::int as tokens from daily_spend
      where player_id = ${playerId} and day = (now() at time zone 'utc')::date`;
    // At least the 4,000 characters sent, at four a token.
    expect(spent!.tokens).toBeGreaterThanOrEqual(1000);
  });
});

function todayUtc(): [number, number, number] {
  const d = new Date();
  return [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
}
