import { costFromUsage } from 'tokenlens';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { foldParts } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { askNpc } from '../support/askNpc.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';
import { openai, openaiStream, startWireFake, type WireFake, type WireStep } from '../support/wireFakes.ts';

// The real server and the real @ai-sdk/openai (whose default Model is the Responses API), against a fake
// Responses endpoint speaking its SSE events.
const MODEL = 'gpt-5-mini';
let fake: WireFake;
let app: TestApp;
let cookie: string;
beforeAll(async () => {
  fake = await startWireFake();
  app = await startTestApp({}, { OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: `${fake.origin}/v1` });
  ({ cookie } = await app.signIn());
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

/** One Player Message to a new OpenAI NPC, answered by `steps`: what was asked, streamed and stored. */
async function ask(steps: WireStep[], { thinking = true, model = MODEL } = {}) {
  fake.enqueue(() => steps);
  const asked = await askNpc(app, cookie, { provider: 'openai', model, thinking }, fake);
  return { ...asked, request: fake.requests.at(-1)! };
}

const usage = { input_tokens: 150, cached_tokens: 100, output_tokens: 57, reasoning_tokens: 40 };
const full = openaiStream(
  openai.created(MODEL),
  openai.reasoning(0, 'rs_1', [
    ['**Reading the chart**\n\n', 'The tide table says six.'],
    ['**Checking the moon**\n\n', 'Full moon: a spring tide.'],
  ]),
  openai.message(1, 'msg_1', ['High tide ', 'is at six.']),
  openai.completed(MODEL, usage),
);

it('streams two summary parts as two reasoning sections and the text as text, stored as streamed', async () => {
  const { request, streamed, reply, finish } = await ask(full);
  expect(request.path).toBe('/v1/responses');
  expect(request.headers.authorization).toBe('Bearer test-key');
  expect(request.body).toMatchObject({ model: MODEL, stream: true });

  // Each summary part is its own section: the server puts a blank line between them.
  const parts = [
    {
      type: 'reasoning',
      text: '**Reading the chart**\n\nThe tide table says six.\n\n**Checking the moon**\n\nFull moon: a spring tide.',
    },
    { type: 'text', text: 'High tide is at six.' },
  ];
  expect(reply.parts).toEqual(parts);
  expect(streamed).toEqual(reply.parts);
  expect(reply.text).toBe('High tide is at six.');
  expect(reply).toMatchObject({ status: 'complete', error: null });

  // OpenAI's input_tokens already includes the cached ones, and output_tokens the reasoning ones.
  const stored = { inputTokens: 150, outputTokens: 57, reasoningTokens: 40, cachedInputTokens: 100 };
  expect(reply.usage).toEqual(stored);
  expect(finish?.usage).toEqual(stored);
  // Priced (the last test checks the price itself).
  expect((reply as typeof reply & { costUsd: unknown }).costUsd).toEqual(expect.any(Number));
});

it('with thinking on asks for an effort and a reasoning summary; off, for neither', async () => {
  // Without `summary` the API returns reasoning items with no text: nothing would show.
  const on = await ask(full);
  expect(on.request.body.reasoning).toEqual({ effort: 'medium', summary: 'detailed' });

  const plain = openaiStream(
    openai.created(MODEL),
    openai.message(0, 'msg_1', ['Six.']),
    openai.completed(MODEL, { input_tokens: 9, output_tokens: 2 }),
  );
  const off = await ask(plain, { thinking: false });
  expect(off.request.body.reasoning).toBeUndefined();
  expect(off.reply.parts).toEqual([{ type: 'text', text: 'Six.' }]);
  expect(off.reply.usage).toEqual({
    inputTokens: 9,
    outputTokens: 2,
    reasoningTokens: 0,
    cachedInputTokens: 0,
  });
});

const partial = [
  openai.created(MODEL),
  openai.reasoning(0, 'rs_1', [['Checking.'], ['Again.']]),
  openai.message(1, 'msg_1', ['The tide ', 'turns at '], true),
];
const partialParts = [
  { type: 'reasoning', text: 'Checking.\n\nAgain.' },
  { type: 'text', text: 'The tide turns at ' },
];

it('a response.failed mid-stream fails the reply, keeps what came before it, and says why', async () => {
  const { streamed, reply, error, finish } = await ask(
    openaiStream(...partial, openai.failed(MODEL, 'server_error', 'The model stopped unexpectedly.')),
  );
  expect(reply.parts).toEqual(partialParts);
  expect(streamed).toEqual(partialParts);
  expect(reply.text).toBe('The tide turns at ');
  expect(reply.status).toBe('failed');
  expect(reply.error).toMatch(/stopped unexpectedly/);
  expect(error?.message).toBe(reply.error);
  expect(finish?.status).toBe('failed');
});

it('an error event mid-stream fails the reply and keeps what came before it', async () => {
  const { streamed, reply, error } = await ask(
    openaiStream(...partial, openai.error('server_error', 'Something went wrong mid-reply.')),
  );
  expect(reply.parts).toEqual(partialParts);
  expect(streamed).toEqual(partialParts);
  expect(reply.status).toBe('failed');
  expect(reply.error).toMatch(/went wrong/);
  expect(error?.message).toBe(reply.error);
});

it('a socket cut mid-stream fails the reply and keeps everything received before the cut', async () => {
  const { streamed, reply, error } = await ask(openaiStream(...partial, [{ cut: true }]));
  expect(reply.parts).toEqual(partialParts);
  expect(streamed).toEqual(partialParts);
  expect(reply.status).toBe('failed');
  expect(reply.error).toEqual(expect.any(String));
  expect(reply.error!.length).toBeGreaterThan(10);
  expect(error?.message).toBe(reply.error);
});

it('a refusal is kept as the reply text, and the reply says the Provider refused', async () => {
  const { streamed, reply, error } = await ask(
    openaiStream(
      openai.created(MODEL),
      openai.refusal(0, 'msg_1', ["I'm sorry, ", "I can't help with that."]),
      openai.completed(MODEL, { input_tokens: 18, output_tokens: 9 }),
    ),
  );
  expect(reply.parts).toEqual([{ type: 'text', text: "I'm sorry, I can't help with that." }]);
  expect(streamed).toEqual(reply.parts);
  expect(reply.status).toBe('failed');
  expect(reply.error).toMatch(/refus/i);
  expect(error?.message).toBe(reply.error);
  expect(reply.usage).toEqual({ inputTokens: 18, outputTokens: 9, reasoningTokens: 0, cachedInputTokens: 0 });
});

// Cached input is priced once, at the cache price (the SDK's input count includes it).
it('prices the cached input tokens at the cache price only', async () => {
  const { reply } = await ask(full);
  const right = costFromUsage({
    id: `openai:${MODEL}`,
    usage: { inputTokens: 50, cachedInputTokens: 100, outputTokens: 57 } as never,
  });
  expect((reply as typeof reply & { costUsd: number }).costUsd).toBeCloseTo(right!, 10);
});

it('a function call is run, its output goes back in a second request, and both steps are stored', async () => {
  fake.enqueue(
    () =>
      openaiStream(
        openai.created(MODEL),
        openai.functionCall(0, 'fc_1', 'call_1', 'remember', ['{"text": "High tide', ' is at six."}']),
        openai.completed(MODEL, { input_tokens: 30, output_tokens: 12 }),
      ),
    () =>
      openaiStream(
        openai.created(MODEL),
        openai.message(0, 'msg_2', ['Noted.']),
        openai.completed(MODEL, { input_tokens: 50, output_tokens: 2 }),
      ),
  );
  const { conversationId } = await setupConversation(app, cookie, [
    { name: 'Tide', provider: 'openai', model: MODEL, grants: [{ kind: 'memory' }] },
  ]);
  const before = fake.requests.length;
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Remember it.' },
    }),
  );
  expect(fake.requests.length).toBe(before + 2);
  // The second request carries the call's output for the call the first made.
  const second = JSON.stringify(fake.requests.at(-1)!.body.input);
  expect(second).toContain('"call_id":"call_1"');
  expect(second).toContain('High tide is at six.');
  const reply = (await messages(app, cookie, conversationId)).find((m) => m.role === 'npc')!;
  expect(reply.parts).toEqual([
    {
      type: 'tool',
      id: 'call_1',
      name: 'remember',
      input: { text: 'High tide is at six.' },
      state: 'done',
      output: { remembered: 'High tide is at six.' },
    },
    { type: 'text', text: 'Noted.' },
  ]);
  expect(foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])))).toEqual(reply.parts);
  expect(reply.usage).toMatchObject({ inputTokens: 80, outputTokens: 14 });
});
