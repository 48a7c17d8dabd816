import { defaultCatalog } from 'tokenlens';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outputTokens } from '../../src/turn/endings.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { askNpc } from '../support/askNpc.ts';
import {
  anthropic,
  gemini,
  openai,
  openaiStream,
  startWireFake,
  type WireFake,
  type WireStep,
} from '../support/wireFakes.ts';

// Issue 27: a reply ends the way the Provider ended it. The real server and the real AI SDK providers, against
// fakes speaking each wire format: the output limit (`max_tokens`, `max_output_tokens`, `MAX_TOKENS`,
// `length`) gives a reply stored and shown as truncated; a stream that ends before the Provider's own end (a
// clean close, Gemini's in-band error lines) gives a failed reply that keeps what arrived.
let fake: WireFake;
let app: TestApp;
beforeAll(async () => {
  fake = await startWireFake();
  app = await startTestApp(
    {},
    {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: `${fake.origin}/v1`,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: `${fake.origin}/v1`,
      GOOGLE_GENERATIVE_AI_API_KEY: 'test-key',
      GOOGLE_BASE_URL: `${fake.origin}/v1beta`,
    },
  );
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

/** A new Player (so the day's spend is this reply's alone) asks a new NPC; `steps` answer. */
async function ask(npc: Record<string, unknown>, steps: WireStep[] | null) {
  const { cookie, playerId } = await app.signIn();
  if (steps) fake.enqueue(() => steps);
  const asked = await askNpc(app, cookie, npc, steps ? fake : app.fake);
  const [spend] = await app.db.sql`select coalesce(sum(tokens), 0)::int as tokens from daily_spend
    where player_id = ${playerId}`;
  return { ...asked, spent: spend!.tokens as number };
}

/** What every truncated reply shows: kept, not an error, and said so in the finish frame and the row. */
function expectTruncated(asked: Awaited<ReturnType<typeof ask>>) {
  expect(asked.reply.status).toBe('truncated');
  expect(asked.finish?.status).toBe('truncated');
  expect(asked.error).toBeUndefined();
  expect(asked.reply.error).toBeNull();
  // As streamed, but for a call the limit cut, which is stored settled as failed, saying why.
  expect(asked.reply.parts).toMatchObject(
    asked.streamed.map((p) =>
      p.type === 'tool' ? { ...p, state: 'failed', error: expect.stringContaining('cut') } : p,
    ),
  );
}

/** What every unfinished reply shows: failed, with the error frame that says so, what arrived kept. */
function expectUnfinished(asked: Awaited<ReturnType<typeof ask>>, provider: string) {
  expect(asked.reply.status).toBe('failed');
  expect(asked.finish?.status).toBe('failed');
  expect(asked.error).toMatchObject({ code: 'PROVIDER_UNFINISHED', messageId: asked.reply.id });
  expect(asked.error?.message).toContain(`The Provider "${provider}" ended the reply without finishing it`);
  expect(asked.reply.error).toBe(asked.error?.message);
  expect(asked.streamed).toEqual(asked.reply.parts);
  // No finished step: usage unknown, and the budget charged an estimate of what was sent (ADR 0032).
  expect(asked.reply.usage).toBeNull();
  expect(asked.spent).toBeGreaterThan(0);
}

describe('Anthropic Messages', () => {
  const MODEL = 'claude-sonnet-4-20250514';
  const npc = { provider: 'anthropic', model: MODEL, thinking: false, grants: [{ kind: 'memory' }] };

  it('max_tokens in the middle of a tool call: truncated, the text kept, the half call failed and never run', async () => {
    const asked = await ask(npc, [
      ...anthropic.messageStart(MODEL, { input_tokens: 40 }),
      ...anthropic.text(0, ['I will note ', 'the whole guide.']),
      ...anthropic.toolUse(1, 'toolu_1', 'remember', ['{"text": "# A GUIDE', '\\n\\nFiling'], true),
      ...anthropic.finish('max_tokens', { output_tokens: 124 }),
    ]);
    expectTruncated(asked);
    expect(asked.reply.text).toBe('I will note the whole guide.');
    const call = asked.reply.parts.find((p) => (p as { type: string }).type === 'tool');
    // The arguments the NPC had sent before the cut are kept, as it sent them (seed 000: a call shows them).
    expect(call).toMatchObject({ state: 'failed', input: '{"text": "# A GUIDE\\n\\nFiling' });
    expect(asked.reply.usage).toMatchObject({ inputTokens: 40, outputTokens: 124 });
    // One request: the cut call was not run and sent back.
    expect(fake.requests.at(-1)!.path).toBe('/v1/messages');
  });

  it('a stream closed cleanly before message_stop (a proxy time-out): failed, what arrived kept', async () => {
    const asked = await ask(npc, [
      ...anthropic.messageStart(MODEL, { input_tokens: 40 }),
      ...anthropic.text(0, ['High tide ', 'is at'], true),
    ]);
    expectUnfinished(asked, 'anthropic');
    expect(asked.reply.text).toBe('High tide is at');
  });
});

describe('OpenAI Responses', () => {
  const MODEL = 'gpt-5-mini';
  const npc = { provider: 'openai', model: MODEL, thinking: false };

  it('response.incomplete for max_output_tokens: truncated, with its usage', async () => {
    const asked = await ask(
      npc,
      openaiStream(
        openai.created(MODEL),
        openai.message(0, 'msg_1', ['High tide ', 'is at'], true),
        openai.incomplete(MODEL, 'max_output_tokens', { input_tokens: 30, output_tokens: 16 }),
      ),
    );
    expectTruncated(asked);
    expect(asked.reply.text).toBe('High tide is at');
    expect(asked.reply.usage).toMatchObject({ inputTokens: 30, outputTokens: 16 });
  });

  it('a stream closed cleanly before response.completed: failed, what arrived kept', async () => {
    const asked = await ask(
      npc,
      openaiStream(openai.created(MODEL), openai.message(0, 'msg_1', ['High tide ', 'is at six.'])),
    );
    expectUnfinished(asked, 'openai');
    expect(asked.reply.text).toBe('High tide is at six.');
  });
});

describe('Gemini', () => {
  const npc = { provider: 'google', model: 'gemini-2.5-flash', thinking: true };

  it('MAX_TOKENS: truncated, with its usage', async () => {
    const asked = await ask(npc, [
      gemini.chunk([gemini.text('High tide ')], { promptTokenCount: 12, candidatesTokenCount: 2 }),
      gemini.chunk([gemini.text('is at')], { promptTokenCount: 12, candidatesTokenCount: 5 }, 'MAX_TOKENS'),
    ]);
    expectTruncated(asked);
    expect(asked.reply.text).toBe('High tide is at');
    expect(asked.reply.usage).toMatchObject({ inputTokens: 12, outputTokens: 5 });
  });

  it('thoughts, then a 503 as raw JSON lines inside the stream: failed, the thoughts kept, no text', async () => {
    const asked = await ask(npc, [
      gemini.chunk([gemini.thought('The user wants a tide')], {
        promptTokenCount: 900,
        thoughtsTokenCount: 6,
      }),
      gemini.chunk([gemini.thought(' table for Brest.')], { promptTokenCount: 900, thoughtsTokenCount: 11 }),
      gemini.inbandError(503, 'UNAVAILABLE', 'This model is currently experiencing high demand.'),
    ]);
    expectUnfinished(asked, 'google');
    expect(asked.reply.parts).toEqual([
      { type: 'reasoning', text: 'The user wants a tide table for Brest.' },
    ]);
    expect(asked.reply.text).toBe('');
  });
});

describe('OpenAI-compatible Chat Completions', () => {
  const npc = { provider: 'fake', model: 'fake-model' };

  it('finish_reason length: truncated, with its usage', async () => {
    app.fake.enqueue((r) => {
      r.text('High tide ');
      r.text('is at');
      r.finish('length', { prompt_tokens: 20, completion_tokens: 8 });
    });
    const asked = await ask(npc, null);
    expectTruncated(asked);
    expect(asked.reply.text).toBe('High tide is at');
    expect(asked.reply.usage).toMatchObject({ inputTokens: 20, outputTokens: 8 });
  });

  it('a stream closed cleanly before the finish chunk: failed, what arrived kept', async () => {
    app.fake.enqueue((r) => {
      r.text('High tide ');
      r.text('is at');
      r.close();
    });
    const asked = await ask(npc, null);
    expectUnfinished(asked, 'fake');
    expect(asked.reply.text).toBe('High tide is at');
  });
});

describe('maxOutputTokens', () => {
  // The registry's own figure, read here rather than typed: the test follows the registry as it is updated.
  const limitOf = (provider: string, model: string) =>
    (
      defaultCatalog as unknown as Record<string, { models: Record<string, { limit?: { output?: number } }> }>
    )[provider]!.models[model]!.limit!.output!;

  it("is the Model's own output limit from the registry, for each kind that knows it", async () => {
    const anthropicModel = 'claude-sonnet-4-20250514';
    await ask({ provider: 'anthropic', model: anthropicModel, thinking: false }, [
      ...anthropic.messageStart(anthropicModel, { input_tokens: 9 }),
      ...anthropic.text(0, ['Six.']),
      ...anthropic.finish('end_turn', { output_tokens: 2 }),
    ]);
    expect(fake.requests.at(-1)!.body.max_tokens).toBe(limitOf('anthropic', anthropicModel));
    expect(limitOf('anthropic', anthropicModel)).toBeGreaterThan(4096);

    await ask(
      { provider: 'openai', model: 'gpt-5-mini', thinking: false },
      openaiStream(
        openai.created('gpt-5-mini'),
        openai.message(0, 'msg_1', ['Six.']),
        openai.completed('gpt-5-mini', { input_tokens: 9, output_tokens: 2 }),
      ),
    );
    expect(fake.requests.at(-1)!.body.max_output_tokens).toBe(limitOf('openai', 'gpt-5-mini'));

    await ask({ provider: 'google', model: 'gemini-2.5-flash', thinking: false }, [
      gemini.chunk([gemini.text('Six.')], { promptTokenCount: 9, candidatesTokenCount: 2 }, 'STOP'),
    ]);
    const config = fake.requests.at(-1)!.body.generationConfig as { maxOutputTokens?: number };
    expect(config.maxOutputTokens).toBe(limitOf('google', 'gemini-2.5-flash'));
  });

  it('is the lower of the two limits known; for Anthropic with thinking (which adds its budget), the cap only', () => {
    expect(outputTokens(64_000, null)).toBe(64_000);
    expect(outputTokens(64_000, 1000)).toBe(1000);
    expect(outputTokens(500, 1000)).toBe(500);
    expect(outputTokens(undefined, null)).toBeUndefined();
    expect(outputTokens(undefined, 1000)).toBe(1000);
    expect(outputTokens(64_000, null, true)).toBeUndefined();
    expect(outputTokens(64_000, 1000, true)).toBe(1000);
  });

  it('is not sent for a Model the registry does not know; the Village setting lowers it', async () => {
    await ask({ provider: 'fake', model: 'fake-model' }, null);
    expect(app.fake.requests.at(-1)!.body).not.toHaveProperty('max_tokens');
    await app.db.sql`update village_settings set max_output_tokens = 1000`;
    try {
      await ask({ provider: 'fake', model: 'fake-model' }, null);
      expect(app.fake.requests.at(-1)!.body.max_tokens).toBe(1000);
      const anthropicModel = 'claude-sonnet-4-20250514';
      await ask({ provider: 'anthropic', model: anthropicModel, thinking: false }, [
        ...anthropic.messageStart(anthropicModel, { input_tokens: 9 }),
        ...anthropic.text(0, ['Six.']),
        ...anthropic.finish('end_turn', { output_tokens: 2 }),
      ]);
      expect(fake.requests.at(-1)!.body.max_tokens).toBe(1000);
    } finally {
      await app.db.sql`update village_settings set max_output_tokens = null`;
    }
  });
});
