import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { foldParts } from '../../src/parts/index.ts';
import { sectionBreak } from '../../src/turn/thinking.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

// A fake Gemini over HTTP, speaking streamGenerateContent's SSE: one thought part (sent only when the request
// asked for thoughts, as Gemini does), then the answer with usage.
const bodies: {
  generationConfig?: { thinkingConfig?: { includeThoughts?: boolean; thinkingBudget?: number } };
}[] = [];
let gemini: http.Server;
/**
 * The next answers' chunks, in order, when a test queues them; else the thought-and-answer stream. A 'CUT'
 * breaks the socket there, after what was written is delivered.
 */
const nextAnswers: unknown[][] = [];
let nextChunks: unknown[] | undefined;
let app: TestApp;
let cookie: string;
beforeAll(async () => {
  gemini = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw) as (typeof bodies)[number];
    bodies.push(body);
    const scripted = nextChunks ?? nextAnswers.shift();
    nextChunks = undefined;
    const chunks = scripted ?? [
      ...(body.generationConfig?.thinkingConfig?.includeThoughts
        ? [
            {
              candidates: [
                { content: { role: 'model', parts: [{ text: 'Weighing the tides.', thought: true }] } },
              ],
            },
          ]
        : []),
      {
        candidates: [
          { content: { role: 'model', parts: [{ text: 'High tide is at six.' }] }, finishReason: 'STOP' },
        ],
        usageMetadata: {
          promptTokenCount: 12,
          candidatesTokenCount: 5,
          thoughtsTokenCount: 7,
          totalTokenCount: 24,
        },
      },
    ];
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const c of chunks) {
      if (c === 'CUT') {
        await new Promise((r) => setTimeout(r, 50));
        res.socket?.destroy();
        return;
      }
      await new Promise<void>((r) => res.write(`data: ${JSON.stringify(c)}\r\n\r\n`, () => r()));
    }
    res.end();
  });
  await new Promise<void>((r) => gemini.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(gemini.address() as AddressInfo).port}/v1beta`;
  app = await startTestApp({}, { GOOGLE_GENERATIVE_AI_API_KEY: 'test-key', GOOGLE_BASE_URL: base });
  ({ cookie } = await app.signIn());
});
afterAll(async () => {
  await app?.close();
  gemini?.closeAllConnections();
  await new Promise((r) => gemini?.close(r));
});

it('a Google NPC with thinking on asks for thoughts, and shows them as reasoning; with it off, does not', async () => {
  const ask = async (thinking: boolean) => {
    const { conversationId } = await setupConversation(app, cookie, [
      { name: 'Tide', provider: 'google', model: 'gemini-2.5-flash', thinking },
    ]);
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: 'When is high tide?' },
      }),
    );
    return foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])));
  };
  const on = await ask(true);
  expect(bodies.at(-1)?.generationConfig?.thinkingConfig?.includeThoughts).toBe(true);
  expect(on).toEqual([
    { type: 'reasoning', text: 'Weighing the tides.' },
    { type: 'text', text: 'High tide is at six.' },
  ]);
  const off = await ask(false);
  expect(bodies.at(-1)?.generationConfig?.thinkingConfig?.includeThoughts).toBeUndefined();
  expect(off).toEqual([{ type: 'text', text: 'High tide is at six.' }]);
});

it('keeps reasoning sections apart: a new section after reasoning text starts after a blank line', () => {
  const sections = [
    '**Reading the chart**',
    'The tide tables say six.',
    '**Checking the moon**',
    'Full moon.',
  ];
  const parts = foldParts([
    { type: 'reasoning', text: sections[0] },
    { type: 'reasoning', text: ` ${sections[1]}` },
  ]);
  const broken = foldParts([sectionBreak(parts), { type: 'reasoning', text: sections[2] }], parts);
  expect(broken).toEqual([{ type: 'reasoning', text: `${sections[0]} ${sections[1]}\n\n${sections[2]}` }]);
  // No break before the first section, or after text.
  expect(sectionBreak([])).toBeNull();
  expect(sectionBreak([{ type: 'text', text: 'Hello' }])).toBeNull();
});

it('a reply Gemini blocks for safety keeps what came and says the Provider ended it, not that it finished', async () => {
  nextChunks = [
    { candidates: [{ content: { role: 'model', parts: [{ text: 'To pick that lock, ' }] } }] },
    {
      candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'SAFETY' }],
      usageMetadata: { promptTokenCount: 11, candidatesTokenCount: 5, totalTokenCount: 16 },
    },
  ];
  const { conversationId } = await setupConversation(app, cookie, [
    { name: 'Tide', provider: 'google', model: 'gemini-2.5-flash' },
  ]);
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'How?' } }),
  );
  const error = frames.find((f) => f.type === 'error') as { code: string; message: string } | undefined;
  expect(error).toMatchObject({ code: 'PROVIDER_BLOCKED' });
  expect(error!.message).toContain('"google" ended this reply itself');
  expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'failed' });
  const reply = (await messages(app, cookie, conversationId)).find((m) => m.role === 'npc')!;
  expect(reply).toMatchObject({ status: 'failed', text: 'To pick that lock, ', error: error!.message });
  expect(reply.usage).toMatchObject({ inputTokens: 11, outputTokens: 5 });
});

const say = (parts: unknown[], finishReason?: string) => ({
  candidates: [{ content: { role: 'model', parts }, ...(finishReason ? { finishReason } : {}) }],
});

it('an error mid-stream, and a cut socket: the reply fails, and keeps everything that came before', async () => {
  nextAnswers.push(
    [
      say([{ text: 'The tide ' }]),
      { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } },
    ],
    [say([{ text: 'The tide ' }]), say([{ text: 'turns at ' }]), 'CUT'],
  );
  for (const kept of ['The tide ', 'The tide turns at ']) {
    const { conversationId } = await setupConversation(app, cookie, [
      { name: 'Tide', provider: 'google', model: 'gemini-2.5-flash' },
    ]);
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'When?' } }),
    );
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'failed' });
    const error = frames.find((f) => f.type === 'error') as { message: string } | undefined;
    const reply = (await messages(app, cookie, conversationId)).find((m) => m.role === 'npc')!;
    expect(reply).toMatchObject({ status: 'failed', text: kept, error: error?.message });
  }
});

it('a function call is run, its response goes back in a second request, and both steps are stored', async () => {
  nextAnswers.push(
    [
      {
        ...say([{ functionCall: { name: 'remember', args: { text: 'High tide is at six.' } } }], 'STOP'),
        usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 12, totalTokenCount: 42 },
      },
    ],
    [
      {
        ...say([{ text: 'Noted.' }], 'STOP'),
        usageMetadata: { promptTokenCount: 50, candidatesTokenCount: 2, totalTokenCount: 52 },
      },
    ],
  );
  const { conversationId } = await setupConversation(app, cookie, [
    { name: 'Tide', provider: 'google', model: 'gemini-2.5-flash', grants: [{ kind: 'memory' }] },
  ]);
  const before = bodies.length;
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Remember it.' },
    }),
  );
  expect(bodies.length).toBe(before + 2);
  const second = JSON.stringify(bodies.at(-1));
  expect(second).toContain('"functionResponse"');
  expect(second).toContain('High tide is at six.');
  const reply = (await messages(app, cookie, conversationId)).find((m) => m.role === 'npc')!;
  expect(reply.parts).toMatchObject([
    {
      type: 'tool',
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
