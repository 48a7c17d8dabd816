import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import {
  extractReasoningMiddleware,
  type LanguageModel,
  streamText,
  type TextStreamPart,
  type ToolSet,
  tool,
  wrapLanguageModel,
} from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyFrame, type Frame, foldParts, type LiveTurn } from '../../src/parts/index.ts';
import {
  type Cause,
  called,
  type Halt,
  MAX_STEPS,
  newReply,
  PARTIAL_INPUT_CHARS,
  type ReplyChunk,
  type ReplyState,
  reduceReply,
  type Settled,
  settle,
  stepCharged,
} from '../../src/turn/reply.ts';

/**
 * The reply reducer fed the AI SDK's own stream parts, the way vercel/ai tests `processUIMessageStream`: a mock
 * Model (no HTTP) streams what a Provider would, `streamText` turns it into the parts `runReply` reads, and
 * the reducer's frames are applied with the browser's `applyFrame`, which must end where the server's state
 * does. Every ending the Provider can produce is here (ADR 0051, 0032, 0050).
 */

const PROMPT_CHARS = 400;
const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
type Reason = 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'interrupted' | 'other';
const finish = (reason: Reason, u = usage(10, 5)): LanguageModelV4StreamPart => ({
  type: 'finish',
  finishReason: { unified: reason, raw: reason },
  usage: u,
});
const text = (...deltas: string[]): LanguageModelV4StreamPart[] => [
  { type: 'text-start', id: 't' },
  ...deltas.map((delta): LanguageModelV4StreamPart => ({ type: 'text-delta', id: 't', delta })),
  { type: 'text-end', id: 't' },
];
const streamOf = (parts: LanguageModelV4StreamPart[], broken?: Error) =>
  new ReadableStream<LanguageModelV4StreamPart>({
    start(c) {
      c.enqueue({ type: 'stream-start', warnings: [] });
      for (const p of parts) c.enqueue(p);
      if (broken) c.error(broken);
      else c.close();
    },
  });
/** A Model whose calls (one per step) stream these parts; `broken` breaks the last call's stream after them. */
const mockModel = (steps: LanguageModelV4StreamPart[][], broken?: Error) =>
  new MockLanguageModelV4({
    doStream: steps.map((parts, i) => ({
      stream: streamOf(parts, i === steps.length - 1 ? broken : undefined),
    })),
  });

/** What `streamText` hands `runReply` for this Model, and what it threw out of the loop, if anything. */
async function sdkChunks(
  model: LanguageModel,
  options: { tools?: ToolSet; abortAfter?: number } = {},
): Promise<{ chunks: TextStreamPart<ToolSet>[]; thrown?: unknown }> {
  const controller = new AbortController();
  const result = streamText({
    model,
    prompt: 'Hello',
    tools: options.tools,
    stopWhen: () => false,
    abortSignal: controller.signal,
    onError: () => {},
  });
  const chunks: TextStreamPart<ToolSet>[] = [];
  try {
    for await (const chunk of result.stream) {
      chunks.push(chunk);
      if (chunk.type === 'text-delta' && options.abortAfter !== undefined && --options.abortAfter < 0)
        controller.abort();
    }
  } catch (thrown) {
    return { chunks, thrown };
  }
  return { chunks };
}

interface Replayed {
  state: ReplyState;
  end: Settled;
  frames: Frame[];
  /** The reply as the browser holds it after every frame. */
  live: LiveTurn['replies'][number];
}

/** Feeds the chunks through the reducer as runReply does (an abort told `halt`), then settles it. */
/** A step charged while the reply runs (the `stopWhen` condition), with the budget found spent or not. */
type Charge = { type: 'charge'; tokens: number; spent: boolean };
const SPENT = { code: 'BUDGET_SPENT', message: 'Your day is spent.' } as const;

function replay(
  chunks: readonly (TextStreamPart<ToolSet> | ReplyChunk | Charge)[],
  options: { halt?: Halt; cause?: Cause; notCalled?: boolean; descriptions?: Record<string, string> } = {},
): Replayed {
  const state = newReply('reply-1', { provider: 'acme', model: 'acme-1' }, 30_000);
  if (!options.notCalled) called(state, PROMPT_CHARS, options.descriptions ?? {});
  const frames: Frame[] = [];
  for (const chunk of chunks) {
    if (chunk.type === 'charge') stepCharged(state, chunk.tokens, chunk.spent ? SPENT : undefined);
    else
      reduceReply(state, chunk.type === 'abort' ? { type: 'abort', halt: options.halt } : chunk, (f) =>
        frames.push(f),
      );
  }
  const end = settle(state, options.cause ?? { type: 'ended', halt: options.halt });
  frames.push(...end.frames);
  return { state, end, frames, live: browserReply(frames) };
}

function browserReply(frames: Frame[]): LiveTurn['replies'][number] {
  let live: LiveTurn = { replies: [] };
  const start: Frame = {
    type: 'start',
    messageId: 'reply-1',
    playerMessageId: 'p-1',
    npc: { id: 'n-1', name: 'Ada' },
    provider: 'acme',
    model: 'acme-1',
  };
  for (const frame of [start, ...frames]) live = applyFrame(live, frame);
  return live.replies[0]!;
}

/** What every reply must satisfy: the browser ends with the server's Parts, status and error. */
function expectAgreement(r: Replayed) {
  expect(r.live.parts).toEqual(r.state.parts);
  expect(foldParts(r.frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])))).toEqual(r.state.parts);
  expect(r.live.status).toBe(r.end.status);
  expect(r.frames.at(-1)).toEqual({
    type: 'finish',
    messageId: 'reply-1',
    status: r.end.status,
    usage: r.end.usage,
  });
  const error = r.frames.find((f) => f.type === 'error');
  if (r.end.status === 'failed') expect(r.live.error).toBe(r.end.error);
  else expect(error).toBeUndefined();
}

const counted = (input: number, output: number) => ({
  inputTokens: input,
  outputTokens: output,
  reasoningTokens: null,
  cachedInputTokens: null,
});

describe('a reply the Provider finished', () => {
  it('finishes normally: complete, with the usage it reported and no estimate', async () => {
    const { chunks } = await sdkChunks(mockModel([[...text('Hel', 'lo'), finish('stop')]]));
    const r = replay(chunks);
    expect(r.state.parts).toEqual([{ type: 'text', text: 'Hello' }]);
    expect(r.end).toMatchObject({ status: 'complete', error: null, code: null, estimatedTokens: null });
    expect(r.end.usage).toEqual(counted(10, 5));
    expect(r.frames.map((f) => f.type)).toEqual(['part', 'part', 'finish']);
    expectAgreement(r);
  });

  it('cut at the output limit (`length`): truncated, what came kept, no error', async () => {
    const { chunks } = await sdkChunks(mockModel([[...text('Once upon a'), finish('length')]]));
    const r = replay(chunks);
    expect(r.end).toMatchObject({ status: 'truncated', error: null, code: null, estimatedTokens: null });
    expect(r.end.usage).toEqual(counted(10, 5));
    expectAgreement(r);
  });

  it('refused (`content-filter`): failed PROVIDER_BLOCKED, saying what was kept only when there was text', async () => {
    const withText = replay(
      (await sdkChunks(mockModel([[...text('I will'), finish('content-filter')]]))).chunks,
    );
    expect(withText.end).toMatchObject({ status: 'failed', code: 'PROVIDER_BLOCKED' });
    expect(withText.end.error).toContain('what it sent is kept');
    expectAgreement(withText);
    const bare = replay((await sdkChunks(mockModel([[finish('content-filter')]]))).chunks);
    expect(bare.end.code).toBe('PROVIDER_BLOCKED');
    expect(bare.end.error).not.toContain('kept');
  });

  it('tool calls with a result and a tool error, then text: every call settled, every step counted', async () => {
    const tools = {
      add: tool({ inputSchema: z.object({ a: z.number() }), execute: async ({ a }) => a + 1 }),
      boom: tool({
        inputSchema: z.object({}),
        execute: async (): Promise<number> => {
          throw new Error('the disk is full');
        },
      }),
    };
    const model = mockModel([
      [
        { type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: '{"a":1}' },
        { type: 'tool-call', toolCallId: 'c2', toolName: 'boom', input: '{}' },
        finish('tool-calls'),
      ],
      [...text('Done.'), finish('stop')],
    ]);
    const r = replay((await sdkChunks(model, { tools })).chunks, { descriptions: { add: 'Adds one.' } });
    expect(r.state.parts).toEqual([
      {
        type: 'tool',
        id: 'c1',
        name: 'add',
        description: 'Adds one.',
        input: { a: 1 },
        state: 'done',
        output: 2,
      },
      { type: 'tool', id: 'c2', name: 'boom', input: {}, state: 'failed', error: 'the disk is full' },
      { type: 'text', text: 'Done.' },
    ]);
    expect(r.end).toMatchObject({ status: 'complete', estimatedTokens: null });
    expect(r.end.usage).toEqual(counted(20, 10));
    expectAgreement(r);
  });

  it('reasoning in `<think>` tags (the middleware every OpenAI-compatible Model gets) is reasoning, not text', async () => {
    const model = wrapLanguageModel({
      model: mockModel([[...text('<think>Let me', ' see</think>', 'Hello'), finish('stop')]]),
      middleware: extractReasoningMiddleware({ tagName: 'think' }),
    });
    const r = replay((await sdkChunks(model)).chunks);
    expect(r.state.parts).toEqual([
      { type: 'reasoning', text: 'Let me see' },
      { type: 'text', text: 'Hello' },
    ]);
    expect(r.end.status).toBe('complete');
    expectAgreement(r);
  });

  it('two reasoning sections stay apart (a blank line), and that break reaches the browser too', async () => {
    const section = (id: string, delta: string): LanguageModelV4StreamPart[] => [
      { type: 'reasoning-start', id },
      { type: 'reasoning-delta', id, delta },
      { type: 'reasoning-end', id },
    ];
    const r = replay(
      (
        await sdkChunks(
          mockModel([[...section('r1', 'First.'), ...section('r2', 'Second.'), finish('stop')]]),
        )
      ).chunks,
    );
    expect(r.state.parts).toEqual([{ type: 'reasoning', text: 'First.\n\nSecond.' }]);
    expectAgreement(r);
  });

  it('a file the NPC shared with share_file is shown after its call, in the stream as in the row', () => {
    const file = {
      type: 'file',
      id: '00000000-0000-4000-8000-000000000001',
      name: 'plot.png',
      mediaType: 'image/png',
      size: 10,
    };
    const r = replay([
      { type: 'tool-result', toolCallId: 'c1', toolName: 'share_file', input: {}, output: { shared: file } },
      { type: 'finish', finishReason: 'tool-calls', rawFinishReason: undefined, totalUsage: {} },
    ] as ReplyChunk[]);
    expect(r.state.parts.map((p) => p.type)).toEqual(['tool', 'file']);
    expect(r.frames.filter((f) => f.type === 'part')).toHaveLength(2);
    expectAgreement(r);
  });
});

describe('a reply the Provider did not finish', () => {
  it('a provider error mid-stream: failed with the Provider’s reason, what came kept', async () => {
    const { chunks } = await sdkChunks(
      mockModel([
        [
          ...text('Half a'),
          { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
          finish('error'),
        ],
      ]),
    );
    const r = replay(chunks);
    expect(r.end).toMatchObject({ status: 'failed', code: 'PROVIDER_OVERLOADED' });
    expect(r.state.parts).toEqual([{ type: 'text', text: 'Half a' }]);
    expectAgreement(r);
  });

  it('a stream that just stops (no finish from the Provider): PROVIDER_UNFINISHED', async () => {
    const { chunks } = await sdkChunks(mockModel([[...text('And then')]]));
    const r = replay(chunks);
    expect(r.end).toMatchObject({ status: 'failed', code: 'PROVIDER_UNFINISHED' });
    expect(r.end.error).toContain('"acme" ended the reply without finishing it');
    expectAgreement(r);
  });

  it('a finish that says `interrupted`: unfinished, its half figure never stored, the estimate charged', async () => {
    const { chunks } = await sdkChunks(
      mockModel([[...text('And then'), finish('interrupted', usage(10, 2))]]),
    );
    const r = replay(chunks);
    expect(r.end).toMatchObject({ status: 'failed', code: 'PROVIDER_UNFINISHED', usage: null });
    expect(r.end.estimatedTokens).toBe(Math.ceil((PROMPT_CHARS + JSON.stringify(r.state.parts).length) / 4));
    expectAgreement(r);
  });

  it('no `finish` part at all (the loop ran out): PROVIDER_UNFINISHED', () => {
    const r = replay([
      { type: 'start-step', request: {}, warnings: [] },
      { type: 'text-delta', id: 't', text: 'So' },
    ] as ReplyChunk[]);
    expect(r.end).toMatchObject({ status: 'failed', code: 'PROVIDER_UNFINISHED', usage: null });
    expectAgreement(r);
  });

  it('the socket breaks mid-stream (thrown out of the loop): failed, named as a broken connection', async () => {
    const broken = Object.assign(new TypeError('terminated'), { cause: { code: 'UND_ERR_SOCKET' } });
    const { chunks, thrown } = await sdkChunks(mockModel([[...text('Par')]], broken));
    expect(thrown).toBe(broken);
    const r = replay(chunks, { cause: { type: 'thrown', error: thrown, halt: undefined } });
    expect(r.end).toMatchObject({ status: 'failed', code: 'PROVIDER_ERROR' });
    expect(r.end.error).toContain('UND_ERR_SOCKET');
    expect(r.end.estimatedTokens).toBeGreaterThan(PROMPT_CHARS / 4);
    expectAgreement(r);
  });
});

describe('a reply our side ended', () => {
  const stopped = async (halt: Halt | undefined) =>
    replay(
      (await sdkChunks(mockModel([[...text('a', 'b', 'c'), finish('stop')]]), { abortAfter: 0 })).chunks,
      {
        halt,
      },
    );

  it('Stop: stopped, no error frame; the step was open, so the whole reply is estimated', async () => {
    const r = await stopped('stopped');
    expect(r.frames.some((f) => f.type === 'part')).toBe(true);
    expect(r.end).toMatchObject({ status: 'stopped', error: null, usage: null });
    expect(r.end.estimatedTokens).toBe(Math.ceil((PROMPT_CHARS + JSON.stringify(r.state.parts).length) / 4));
    expectAgreement(r);
  });

  it('the server shutting down: interrupted, with why in the row and no error frame', async () => {
    const r = await stopped('interrupted');
    expect(r.end).toMatchObject({ status: 'interrupted', code: null });
    expect(r.end.error).toContain('The server restarted');
    expectAgreement(r);
  });

  it('a bound of the reply: failed with its own code', async () => {
    const r = await stopped({ code: 'REPLY_TOO_LONG', message: 'Too long.' });
    expect(r.end).toMatchObject({ status: 'failed', code: 'REPLY_TOO_LONG', error: 'Too long.' });
    expectAgreement(r);
  });

  it('an abort that is none of ours is the SDK’s silence time-out', async () => {
    const r = await stopped(undefined);
    expect(r.end).toMatchObject({ status: 'failed', code: 'PROVIDER_TIMEOUT' });
    expect(r.end.error).toContain('30 s');
    expectAgreement(r);
  });

  it('a step counted, the next one cut: usage is the counted step, the cut one estimated (ADR 0032)', async () => {
    const tools = {
      add: tool({ inputSchema: z.object({ a: z.number() }), execute: async ({ a }) => a + 1 }),
    };
    const model = mockModel([
      [{ type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: '{"a":1}' }, finish('tool-calls')],
      [...text('xxxx', 'yyyy'), finish('stop')],
    ]);
    const r = replay((await sdkChunks(model, { tools, abortAfter: 0 })).chunks, { halt: 'stopped' });
    expect(r.end.status).toBe('stopped');
    expect(r.end.usage).toEqual(counted(10, 5));
    // The cut step's prompt and what it streamed (the SDK may have read the next delta before the abort).
    const cut = r.state.parts.at(-1);
    expect(cut).toMatchObject({ type: 'text', text: expect.stringMatching(/^xxxx/) });
    expect(r.end.estimatedTokens).toBe(Math.ceil((PROMPT_CHARS + (cut as { text: string }).text.length) / 4));
    expectAgreement(r);
  });

  it('a call cut before it was whole keeps the arguments sent so far, bounded; a whole call keeps its own', () => {
    const r = replay(
      [
        { type: 'start-step', request: {}, warnings: [] },
        { type: 'tool-input-start', id: 'c1', toolName: 'search' },
        { type: 'tool-input-delta', id: 'c1', delta: '{"q":' },
        { type: 'tool-input-delta', id: 'c1', delta: '"weat' },
        { type: 'tool-input-start', id: 'c2', toolName: 'search' },
        { type: 'tool-input-delta', id: 'c2', delta: 'x'.repeat(PARTIAL_INPUT_CHARS - 1) },
        { type: 'tool-input-delta', id: 'c2', delta: 'yz' },
        { type: 'tool-input-delta', id: 'c2', delta: 'more' },
        { type: 'tool-input-start', id: 'c3', toolName: 'search' },
        { type: 'tool-input-delta', id: 'c3', delta: '{"q":1}' },
        { type: 'tool-call', toolCallId: 'c3', toolName: 'search', input: { q: 1 } },
        { type: 'abort' },
      ] as ReplyChunk[],
      { halt: 'stopped' },
    );
    expect(r.end.status).toBe('stopped');
    const calls = r.state.parts.filter((p) => p.type === 'tool');
    expect(calls.map((c) => c.input)).toEqual([
      '{"q":"weat',
      `${'x'.repeat(PARTIAL_INPUT_CHARS - 1)}y`,
      { q: 1 },
    ]);
    // The browser is told: what it folded is what is stored.
    expectAgreement(r);
  });

  it('every step spent on tools is not a finished reply: failed STEP_LIMIT, unless the last handed over', () => {
    const step = (i: number, toolName = 'search', output: unknown = { found: i }, input: unknown = {}) =>
      [
        { type: 'start-step', request: {}, warnings: [] },
        { type: 'tool-call', toolCallId: `c${i}`, toolName, input },
        { type: 'tool-result', toolCallId: `c${i}`, toolName, input, output },
        { type: 'finish-step', finishReason: 'tool-calls', usage: { inputTokens: 7, outputTokens: 3 } },
      ] as ReplyChunk[];
    const end = {
      type: 'finish',
      finishReason: 'tool-calls',
      totalUsage: { inputTokens: 70, outputTokens: 30 },
    };
    const steps = (n: number) => Array.from({ length: n }, (_, i) => step(i)).flat();
    const spent = replay([...steps(MAX_STEPS), end] as ReplyChunk[]);
    expect(spent.end).toMatchObject({ status: 'failed', code: 'STEP_LIMIT' });
    expect(spent.end.error).toContain(`all ${MAX_STEPS} of its steps`);
    // Everything it did is kept.
    expect(spent.state.parts.filter((p) => p.type === 'tool')).toHaveLength(MAX_STEPS);
    expectAgreement(spent);
    // A hand-over on the last step ends the reply as it should; fewer steps than the limit are the Provider's
    // own ending.
    const handed = step(MAX_STEPS - 1, 'message_npc', { handedTo: 'Bo' }, { npc: 'Bo', message: 'Yours.' });
    expect(replay([...steps(MAX_STEPS - 1), ...handed, end] as ReplyChunk[]).end.status).toBe('complete');
    expect(replay([...steps(MAX_STEPS - 1), end] as ReplyChunk[]).end.status).toBe('complete');
    // Counted from the calls, not the Provider's word: a last step that called tools but said "stop" ran out
    // too, and a last step of text alone that said "tool-calls" did not.
    const saidStop = { ...end, finishReason: 'stop' };
    expect(replay([...steps(MAX_STEPS), saidStop] as ReplyChunk[]).end).toMatchObject({ code: 'STEP_LIMIT' });
    const textOnly = [
      { type: 'start-step', request: {}, warnings: [] },
      { type: 'text-delta', id: 't', text: 'Done.' },
      { type: 'finish-step', finishReason: 'tool-calls', usage: { inputTokens: 7, outputTokens: 3 } },
    ];
    expect(replay([...steps(MAX_STEPS - 1), ...textOnly, end] as ReplyChunk[]).end.status).toBe('complete');
    // A call the Provider ran itself asks for no further step.
    const byProvider = step(MAX_STEPS - 1).map((c) =>
      c.type === 'tool-call' ? { ...c, providerExecuted: true } : c,
    );
    expect(replay([...steps(MAX_STEPS - 1), ...byProvider, end] as ReplyChunk[]).end.status).toBe('complete');
  });

  it('stopped between steps (the last one counted, no next one begun): its usage, and nothing estimated', () => {
    const r = replay(
      [
        { type: 'start-step', request: {}, warnings: [] },
        { type: 'text-delta', id: 't', text: 'Let me look.' },
        { type: 'finish-step', finishReason: 'tool-calls', usage: { inputTokens: 7, outputTokens: 3 } },
        { type: 'abort' },
      ] as ReplyChunk[],
      { halt: 'stopped' },
    );
    expect(r.end).toMatchObject({ status: 'stopped', usage: counted(7, 3), estimatedTokens: null });
    expectAgreement(r);
  });

  it('the budget spent after a step (ADR 0050): failed BUDGET_SPENT, the charged steps passed on', () => {
    const state = newReply('reply-1', { provider: 'acme', model: 'acme-1' }, 30_000);
    called(state, PROMPT_CHARS, {});
    stepCharged(state, 15, { code: 'BUDGET_SPENT', message: 'Your day is spent.' });
    const end = settle(state, { type: 'ended', halt: undefined });
    expect(end).toMatchObject({ status: 'failed', code: 'BUDGET_SPENT', chargedTokens: 15 });
  });

  it('the budget spent before the call: failed BUDGET_SPENT, nothing charged', () => {
    const r = replay([], {
      notCalled: true,
      cause: { type: 'budget', spent: { code: 'BUDGET_SPENT', message: 'Spent.' } },
    });
    expect(r.end).toMatchObject({
      status: 'failed',
      code: 'BUDGET_SPENT',
      estimatedTokens: null,
      usage: null,
    });
    expectAgreement(r);
  });

  it('a failure before the Provider is called is ours (INTERNAL) and costs nothing; stopped then, it is a stop', () => {
    const setup = replay([], {
      notCalled: true,
      cause: { type: 'thrown', error: new Error('db'), halt: undefined },
    });
    expect(setup.end).toMatchObject({ status: 'failed', code: 'INTERNAL', estimatedTokens: null });
    expect(setup.end.error).toContain('could not be prepared');
    const stop = replay([], {
      notCalled: true,
      cause: { type: 'thrown', error: new Error('aborted'), halt: 'stopped' },
    });
    expect(stop.end).toMatchObject({ status: 'stopped', code: null });
  });
});

describe('any stream, any ending', () => {
  const id = fc.constantFrom('a', 'b', 'c');
  // NUL and halves of surrogate pairs among ordinary text: what a Provider or a tool may send.
  const str = fc.string({
    unit: fc.constantFrom('a', ' ', 'é', '😀', '\u0000', '\ud83d', '\ude00'),
    maxLength: 6,
  });
  const reason = fc.constantFrom<Reason>(
    'stop',
    'length',
    'content-filter',
    'tool-calls',
    'error',
    'interrupted',
    'other',
  );
  const count = fc.option(fc.nat(500), { nil: undefined });
  const sdkUsage = fc
    .record({ inputTokens: count, outputTokens: count })
    .map((u) => ({ ...u, inputTokenDetails: {}, outputTokenDetails: {} }));
  const json = fc.dictionary(fc.constantFrom('q', 'n', 'path'), fc.oneof(str, fc.integer()), { maxKeys: 2 });
  // Endings of our own and of the Provider's less often than content, so that many runs reach a finish.
  const rare = <T>(arbitrary: fc.Arbitrary<T>) => ({ arbitrary, weight: 1 });
  const often = <T>(arbitrary: fc.Arbitrary<T>) => ({ arbitrary, weight: 4 });
  const event = fc.oneof(
    often(str.map((t) => ({ type: 'text-delta', id: 't', text: t }))),
    often(str.map((t) => ({ type: 'reasoning-delta', id: 'r', text: t }))),
    often(fc.constant({ type: 'reasoning-start', id: 'r' })),
    often(id.map((i) => ({ type: 'tool-input-start', id: i, toolName: 'search' }))),
    often(
      fc
        .record({ toolCallId: id, input: json })
        .map((c) => ({ type: 'tool-call', toolName: 'search', ...c })),
    ),
    often(
      fc
        .record({ toolCallId: id, output: json })
        .map((c) => ({ type: 'tool-result', toolName: 'search', input: {}, ...c })),
    ),
    often(
      fc
        .record({ toolCallId: id, error: str })
        .map((c) => ({ type: 'tool-error', toolName: 'search', input: {}, ...c })),
    ),
    often(fc.constant({ type: 'start-step', request: {}, warnings: [] })),
    often(fc.record({ finishReason: reason, usage: sdkUsage }).map((c) => ({ type: 'finish-step', ...c }))),
    often(fc.record({ finishReason: reason, totalUsage: sdkUsage }).map((c) => ({ type: 'finish', ...c }))),
    rare(str.map((message) => ({ type: 'error', error: { message } }))),
    rare(fc.constant({ type: 'abort' })),
    often(
      fc.record({ tokens: fc.nat(100), spent: fc.constant(false) }).map((c) => ({ type: 'charge', ...c })),
    ),
    rare(fc.record({ tokens: fc.nat(100), spent: fc.constant(true) }).map((c) => ({ type: 'charge', ...c }))),
  ) as fc.Arbitrary<ReplyChunk | Charge>;
  const halt = fc.option(
    fc.constantFrom<Halt>('stopped', 'interrupted', { code: 'REPLY_TOO_LONG', message: 'Too long.' }),
    { nil: undefined },
  );
  const cause: fc.Arbitrary<Cause> = fc.oneof(
    often(fc.constant<Cause>({ type: 'ended', halt: undefined })),
    rare(halt.map((h): Cause => ({ type: 'ended', halt: h }))),
    rare(
      fc
        .record({ error: fc.oneof(fc.string(), fc.constant(new Error('x')), fc.constant(null)), halt })
        .map((c): Cause => ({ type: 'thrown', ...c })),
    ),
    rare(fc.constant<Cause>({ type: 'budget', spent: SPENT })),
  );
  const run = fc.record({ events: fc.array(event, { maxLength: 24 }), halt, cause, notCalled: fc.boolean() });
  const runs = { numRuns: 300 };

  /** Every string in it can be stored in jsonb (no NUL, no half surrogate pair). */
  const storable = (value: unknown): boolean =>
    typeof value === 'string'
      ? value.isWellFormed() && !value.includes('\u0000')
      : typeof value !== 'object' || value === null || Object.values(value).every(storable);

  it('the browser, applying the frames, ends with the Parts the server stores, its status and its error', () => {
    fc.assert(
      fc.property(run, ({ events, halt, cause, notCalled }) => {
        const r = replay(events, { halt, cause, notCalled });
        expectAgreement(r);
        expect(storable(r.state.parts)).toBe(true);
      }),
      runs,
    );
  });

  it('settle is total: one status, a finish last, an error frame exactly when failed, the estimate by its rule', () => {
    fc.assert(
      fc.property(run, ({ events, halt, cause, notCalled }) => {
        const { state, end, frames } = replay(events, { halt, cause, notCalled });
        expect(['complete', 'truncated', 'stopped', 'failed', 'interrupted']).toContain(end.status);
        expect(frames.at(-1)?.type).toBe('finish');
        const errors = frames.filter((f) => f.type === 'error');
        expect(errors).toHaveLength(end.status === 'failed' ? 1 : 0);
        expect(end.code === null).toBe(end.status !== 'failed');
        expect(end.chargedTokens).toBe(
          events.reduce((sum, e) => sum + (e.type === 'charge' ? e.tokens : 0), 0),
        );
        const reported = end.usage?.inputTokens != null || end.usage?.outputTokens != null;
        if (notCalled) expect(end.estimatedTokens).toBeNull();
        else if (!reported)
          expect(end.estimatedTokens).toBe(
            Math.ceil((PROMPT_CHARS + JSON.stringify(state.parts).length) / 4),
          );
        else if (end.estimatedTokens !== null)
          expect(end.estimatedTokens).toBeGreaterThanOrEqual(PROMPT_CHARS / 4);
      }),
      runs,
    );
  });

  it('complete and truncated only when the Provider said so, and nothing else ended the reply', () => {
    fc.assert(
      fc.property(run, ({ events, halt, cause, notCalled }) => {
        const { end } = replay(events, { halt, cause, notCalled });
        if (end.status !== 'complete' && end.status !== 'truncated') return;
        const finishes = events.flatMap((e) => (e.type === 'finish' ? [e.finishReason] : []));
        // The first finish that is not a finished reply decides (later ones find the reply ended already).
        const decisive = finishes.find((f) => f !== 'stop' && f !== 'tool-calls');
        expect(finishes.length).toBeGreaterThan(0);
        expect(decisive).toBe(end.status === 'truncated' ? 'length' : undefined);
        expect(events.some((e) => e.type === 'error' || e.type === 'abort')).toBe(false);
        expect(cause.type).toBe('ended');
        if (end.status === 'complete') {
          expect(cause).toEqual({ type: 'ended', halt: undefined });
          expect(events.some((e) => e.type === 'charge' && e.spent)).toBe(false);
        }
      }),
      runs,
    );
  });
});
