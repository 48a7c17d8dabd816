import { costFromUsage } from 'tokenlens';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { foldParts } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { askNpc } from '../support/askNpc.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';
import { anthropic, startWireFake, type WireFake, type WireStep } from '../support/wireFakes.ts';

// The real server and the real @ai-sdk/anthropic, against a fake Messages API speaking its SSE events.
const MODEL = 'claude-sonnet-4-20250514';
let fake: WireFake;
let app: TestApp;
let cookie: string;
beforeAll(async () => {
  fake = await startWireFake();
  app = await startTestApp({}, { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: `${fake.origin}/v1` });
  ({ cookie } = await app.signIn());
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

/** One Player Message to a new Anthropic NPC, answered by `steps`: what was asked, streamed and stored. */
async function ask(steps: WireStep[], { thinking = true, model = MODEL } = {}) {
  fake.enqueue(() => steps);
  const asked = await askNpc(app, cookie, { provider: 'anthropic', model, thinking }, fake);
  return { ...asked, request: fake.requests.at(-1)! };
}

const answer = (text: string[]): WireStep[] => [
  ...anthropic.messageStart(MODEL, { input_tokens: 9 }),
  ...anthropic.text(0, text),
  ...anthropic.finish('end_turn', { output_tokens: 4 }),
];

const full = [
  ...anthropic.messageStart(MODEL, {
    input_tokens: 20,
    cache_read_input_tokens: 100,
    cache_creation_input_tokens: 30,
  }),
  ...anthropic.thinking(0, ['The tide table ', 'says six.']),
  ...anthropic.thinking(1, ['Full moon, ', 'so a spring tide.']),
  ...anthropic.text(2, ['High tide ', 'is at six.']),
  ...anthropic.finish('end_turn', { output_tokens: 57, thinking_tokens: 40 }),
];

it('streams two thinking blocks as two reasoning sections and the text as text, stored as streamed', async () => {
  const { request, streamed, reply, finish } = await ask(full);
  expect(request.path).toBe('/v1/messages');
  expect(request.headers['x-api-key']).toBe('test-key');
  expect(request.body).toMatchObject({ model: MODEL, stream: true });
  // The stable head of the system prompt (identity, the Player's prompt, the Skill index) is marked for
  // Anthropic's prompt cache; this NPC has nothing after it, so it is the one block.
  const system = request.body.system as { type: string; text: string; cache_control?: unknown }[];
  expect(system[0]!.text.startsWith('# Who you are\nYou are Tide.')).toBe(true);
  expect(system[0]!.cache_control).toEqual({ type: 'ephemeral' });

  // Each block is its own section: the server puts a blank line between them, never runs them together.
  const parts = [
    { type: 'reasoning', text: 'The tide table says six.\n\nFull moon, so a spring tide.' },
    { type: 'text', text: 'High tide is at six.' },
  ];
  expect(reply.parts).toEqual(parts);
  expect(streamed).toEqual(reply.parts);
  expect(reply.text).toBe('High tide is at six.');
  expect(reply).toMatchObject({ status: 'complete', error: null });

  // Anthropic's input_tokens excludes the cache: the SDK adds cache reads and writes back (20 + 100 + 30),
  // so inputTokens is the whole prompt, as OpenAI counts it; the cached share is the cache reads alone.
  const usage = { inputTokens: 150, outputTokens: 57, reasoningTokens: 40, cachedInputTokens: 100 };
  expect(reply.usage).toEqual(usage);
  expect(finish?.usage).toEqual(usage);
  // Priced (the last test checks the price itself).
  expect((reply as typeof reply & { costUsd: unknown }).costUsd).toEqual(expect.any(Number));
});

it('with thinking on asks for visible thinking (a budget, or adaptive summarized thinking); off, for none', async () => {
  const on = await ask(answer(['Six.']));
  const thinking = on.request.body.thinking as { type: string; budget_tokens: number };
  expect(thinking).toEqual({ type: 'enabled', budget_tokens: expect.any(Number) });
  // The API refuses a budget under 1024 or one that leaves max_tokens no room for the answer.
  expect(thinking.budget_tokens).toBeGreaterThanOrEqual(1024);
  expect(on.request.body.max_tokens).toBeGreaterThan(thinking.budget_tokens);

  // Newer models think adaptively: the summarized display is what makes the thinking text come back.
  const adaptive = await ask(answer(['Six.']), { model: 'claude-sonnet-4-6' });
  expect(adaptive.request.body.thinking).toEqual({ type: 'adaptive', display: 'summarized' });
  expect(adaptive.request.body.output_config).toEqual({ effort: 'medium' });

  const off = await ask(answer(['Six.']), { thinking: false });
  expect(off.request.body.thinking).toBeUndefined();
  expect(off.request.body.output_config).toBeUndefined();
  expect(off.reply.parts).toEqual([{ type: 'text', text: 'Six.' }]);
});

it('an overloaded_error mid-stream fails the reply and keeps what came before it', async () => {
  const { streamed, reply, error, finish } = await ask([
    ...anthropic.messageStart(MODEL, { input_tokens: 12 }),
    ...anthropic.thinking(0, ['Checking.']),
    ...anthropic.text(1, ['The tide ', 'turns at '], true),
    ...anthropic.error('overloaded_error', 'Overloaded'),
  ]);
  const parts = [
    { type: 'reasoning', text: 'Checking.' },
    { type: 'text', text: 'The tide turns at ' },
  ];
  expect(reply.parts).toEqual(parts);
  expect(streamed).toEqual(parts);
  expect(reply.text).toBe('The tide turns at ');
  expect(reply.status).toBe('failed');
  expect(reply.error).toMatch(/overloaded/i);
  expect(error?.message).toBe(reply.error);
  expect(finish?.status).toBe('failed');
});

it('a socket cut mid-stream fails the reply and keeps everything received before the cut', async () => {
  const { streamed, reply, error } = await ask([
    ...anthropic.messageStart(MODEL, { input_tokens: 12 }),
    ...anthropic.thinking(0, ['Checking.']),
    ...anthropic.thinking(1, ['Again.']),
    ...anthropic.text(2, ['The tide ', 'turns at ', 'half past'], true),
    { cut: true },
  ]);
  const parts = [
    { type: 'reasoning', text: 'Checking.\n\nAgain.' },
    { type: 'text', text: 'The tide turns at half past' },
  ];
  expect(reply.parts).toEqual(parts);
  expect(streamed).toEqual(parts);
  expect(reply.status).toBe('failed');
  expect(reply.error).toEqual(expect.any(String));
  expect(reply.error!.length).toBeGreaterThan(10);
  expect(error?.message).toBe(reply.error);
});

it('a refusal (stop_reason "refusal") keeps the text, says the Provider refused, and counts the usage', async () => {
  const { streamed, reply, error } = await ask([
    ...anthropic.messageStart(MODEL, { input_tokens: 18 }),
    ...anthropic.text(0, ['I can help with ', 'the']),
    ...anthropic.finish(
      'refusal',
      { output_tokens: 5 },
      { type: 'refusal', category: 'cyber', explanation: 'This request was blocked.' },
    ),
  ]);
  expect(reply.parts).toEqual([{ type: 'text', text: 'I can help with the' }]);
  expect(streamed).toEqual(reply.parts);
  // A cut-off reply stored as complete, with no word of why, would read as the NPC's whole answer.
  expect(reply.status).toBe('failed');
  expect(reply.error).toMatch(/refus/i);
  expect(error?.message).toBe(reply.error);
  expect(reply.usage).toEqual({
    inputTokens: 18,
    outputTokens: 5,
    reasoningTokens: null,
    cachedInputTokens: 0,
  });
});

// Cached input is priced once, at the cache price (the SDK's input count includes it).
it('prices cache reads and writes at their own prices', async () => {
  const { reply } = await ask(full);
  const right = costFromUsage({
    id: `anthropic:${MODEL}`,
    usage: { inputTokens: 20, cachedInputTokens: 100, cacheWrites: 30, outputTokens: 57 } as never,
  });
  expect((reply as typeof reply & { costUsd: number }).costUsd).toBeCloseTo(right!, 10);
});

it('a tool call streamed as tool_use is run, its result goes back in a second request, and both are stored', async () => {
  fake.enqueue(
    () => [
      ...anthropic.messageStart(MODEL, { input_tokens: 30 }),
      ...anthropic.text(0, ['Let me note that.']),
      ...anthropic.toolUse(1, 'toolu_1', 'remember', ['{"text": "High tide', ' is at six."}']),
      ...anthropic.finish('tool_use', { output_tokens: 12 }),
    ],
    () => [
      ...anthropic.messageStart(MODEL, { input_tokens: 50 }),
      ...anthropic.text(0, ['Noted.']),
      ...anthropic.finish('end_turn', { output_tokens: 2 }),
    ],
  );
  const { conversationId } = await setupConversation(app, cookie, [
    { name: 'Tide', provider: 'anthropic', model: MODEL, grants: [{ kind: 'memory' }] },
  ]);
  const before = fake.requests.length;
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Remember it.' },
    }),
  );
  expect(fake.requests.length).toBe(before + 2);
  // The second request carries the tool's result for the call the first answer made.
  const second = JSON.stringify(fake.requests.at(-1)!.body.messages);
  expect(second).toContain('"tool_use_id":"toolu_1"');
  expect(second).toContain('High tide is at six.');
  const reply = (await messages(app, cookie, conversationId)).find((m) => m.role === 'npc')!;
  expect(reply.parts).toEqual([
    { type: 'text', text: 'Let me note that.' },
    {
      type: 'tool',
      id: 'toolu_1',
      name: 'remember',
      input: { text: 'High tide is at six.' },
      state: 'done',
      output: { remembered: 'High tide is at six.' },
    },
    { type: 'text', text: 'Noted.' },
  ]);
  expect(foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])))).toEqual(reply.parts);
  expect(reply.text).toBe('Let me note that.\n\nNoted.');
  // Usage is the sum of both steps.
  expect(reply.usage).toMatchObject({ inputTokens: 80, outputTokens: 14 });
});
