import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import type { Frame } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

// Issue 25, item 4: the daily budgets hold during a turn, not only when it starts. Three Party turns admitted at
// 1 token short ran 168 Provider calls and charged 6.1× the budget.
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
}, 60_000);
afterAll(() => app?.close());
beforeEach(async () => {
  app.fake.clear();
  await app.db
    .sql`update village_settings set turns_per_minute = 1000, concurrent_streams = 1000, hop_limit = 20,
    player_daily_tokens = 2000000, village_daily_tokens = 100000000000`;
});

const STEP = { prompt_tokens: 600, completion_tokens: 400 };
const handOver = (npc: string) => (r: Reply) => {
  r.toolCallStart(
    0,
    `call_${npc}_${Math.random()}`,
    'message_npc',
    JSON.stringify({ npc, message: 'You next.' }),
  );
  r.finish('tool_calls', STEP);
};
const remember = (i: number) => (r: Reply) => {
  r.text(`Noting ${i}. `);
  r.toolCallStart(0, `call_${i}`, 'remember', JSON.stringify({ text: `Fact ${i}.` }));
  r.finish('tool_calls', STEP);
};
const streamed = () => app.fake.requests.filter((r) => r.body.stream).length;
/** The Player's day, spent to 1 token short of the budget. */
const spendAllBut = async (playerId: string, left: number) => {
  await app.db.sql`insert into daily_spend (day, player_id, tokens)
    values ((now() at time zone 'utc')::date, ${playerId}, ${2_000_000 - left})
    on conflict (day, player_id) do update set tokens = excluded.tokens`;
};
const spent = async (playerId: string) =>
  (
    await app.db.sql`select tokens::float8 as t from daily_spend
      where day = (now() at time zone 'utc')::date and player_id = ${playerId}`
  )[0]!.t as number;

it('three Party turns admitted at 1 token short make at most one Provider call each, then stop with BUDGET_SPENT', async () => {
  const { cookie, playerId } = await app.signIn();
  const party = [{ name: 'Ada' }, { name: 'Bo' }];
  const conversations = await Promise.all(
    [0, 1, 2].map(() => setupConversation(app, cookie, party).then((c) => c.conversationId)),
  );
  // Without a check per call, each turn would hand over until the hop limit: 3 × 21 calls.
  for (let i = 0; i < 63; i++) app.fake.enqueue(handOver(i % 2 ? 'Ada' : 'Bo'));
  await spendAllBut(playerId, 1);
  const before = streamed();
  const turns = await Promise.all(
    conversations.map((c) =>
      app.api(`/api/conversations/${c}/messages`, { cookie, body: { text: '@Ada go' } }),
    ),
  );
  // A turn whose first call comes after another's was charged is refused before it calls at all: at its start
  // (429 TOKEN_BUDGET) or, admitted a moment earlier, before its first call. Counted once every turn has ended
  // (a turn's answer starts before its first call).
  for (const res of turns) {
    if (res.status === 429) {
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('TOKEN_BUDGET');
      continue;
    }
    const frames = await collectFrames(res);
    const error = frames.find((f): f is Extract<Frame, { type: 'error' }> => f.type === 'error');
    expect(error).toMatchObject({
      code: 'BUDGET_SPENT',
      message: expect.stringMatching(/today's 2,000,000/),
    });
    expect(frames.filter((f) => f.type === 'start')).toHaveLength(1);
  }
  const calls = streamed() - before;
  expect(calls).toBeGreaterThanOrEqual(1);
  expect(calls).toBeLessThanOrEqual(3);
  // What each call took is charged, and no more calls were made past it.
  expect(await spent(playerId)).toBe(2_000_000 - 1 + calls * 1000);
});

it('a tool loop stops at the step that spends the budget, keeping what arrived', async () => {
  const { cookie, playerId } = await app.signIn();
  const { conversationId } = await setupConversation(app, cookie, [
    { name: 'Tide', grants: [{ kind: 'memory' }] },
  ]);
  for (let i = 0; i < 8; i++) app.fake.enqueue(remember(i));
  // Room for two steps: the third is never asked for.
  await spendAllBut(playerId, 1500);
  const before = streamed();
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Note things' } }),
  );
  expect(streamed() - before).toBe(2);
  expect(frames.find((f) => f.type === 'error')).toMatchObject({ code: 'BUDGET_SPENT' });
  const reply = (await messages(app, cookie, conversationId)).at(-1)!;
  expect(reply.text).toContain('Noting 1.');
  expect(reply.status).toBe('failed');
  expect(await spent(playerId)).toBe(2_000_000 - 1500 + 2 * 1000);
});

it('a hand-over is not made once the Village has spent its day', async () => {
  const { cookie } = await app.signIn();
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }, { name: 'Bo' }]);
  // The Village's day ends with Ada's call: Bo is never called.
  const v = (
    await app.db.sql`select coalesce(sum(tokens), 0)::float8 as v from village_spend
      where day = (now() at time zone 'utc')::date`
  )[0]!.v as number;
  await app.db.sql`update village_settings set village_daily_tokens = ${v + 500}`;
  app.fake.enqueue(handOver('Bo'), handOver('Ada'));
  const before = streamed();
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: '@Ada go' } }),
  );
  expect(streamed() - before).toBe(1);
  expect(frames.find((f) => f.type === 'error')).toMatchObject({
    code: 'BUDGET_SPENT',
    message: expect.stringMatching(/The Village has used today's tokens/),
  });
});

it('the rolling summary asks before each call: a backlog stops being folded once the day is spent', async () => {
  const { cookie, playerId } = await app.signIn();
  const { conversationId } = await setupConversation(app, cookie);
  // An imported-like backlog: forty turns of ~900 characters, never summarised (four summary calls a turn).
  await app.db.sql`insert into messages (conversation_id, role, npc_name, parts, text)
    select ${conversationId}, case when i % 2 = 1 then 'player' else 'npc' end,
      case when i % 2 = 1 then null else 'Ada' end,
      jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'B' || i || ' ' || repeat('lorem ipsum ', 75))),
      'B' || i || ' ' || repeat('lorem ipsum ', 75)
    from generate_series(1, 40) i`;
  await app.db.sql`update village_settings set history_budget = 1000`;
  try {
    // Room for one summary call (the fake charges 12 tokens a call): the second is not made, nor the reply.
    await spendAllBut(playerId, 1);
    const summaries = () => app.fake.requests.filter((r) => !r.body.stream).length;
    const before = { summaries: summaries(), streamed: streamed() };
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Go on' } }),
    );
    expect(summaries() - before.summaries).toBe(1);
    expect(streamed() - before.streamed).toBe(0);
    expect(frames.find((f) => f.type === 'error')).toMatchObject({ code: 'BUDGET_SPENT' });
    expect(await spent(playerId)).toBe(2_000_000 - 1 + 12);
  } finally {
    await app.db.sql`update village_settings set history_budget = 60000`;
  }
});
