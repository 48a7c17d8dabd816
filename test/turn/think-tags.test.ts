import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { foldParts } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { askNpc } from '../support/askNpc.ts';
import { type FakeProvider, type Script, startFakeProvider } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

// Issue 27: R1-style models served without a reasoning parser (Groq's reasoning_format=raw, Ollama, vLLM,
// LM Studio) put their chain of thought in the content, inside <think>…</think>. It is split out as a
// reasoning Part: never text, never in the flat text, never sent back as history.
let app: TestApp;
let fake: FakeProvider;
let tagged: FakeProvider;
let cookie: string;
beforeAll(async () => {
  fake = await startFakeProvider();
  tagged = await startFakeProvider();
  app = await startTestApp(
    {},
    {
      // The default endpoint (no tag named: `think`) and one whose models use another tag.
      COMPATIBLE_PROVIDERS: JSON.stringify([
        { id: 'fake', baseURL: fake.baseURL, apiKey: 'test-key' },
        { id: 'tagged', baseURL: tagged.baseURL, reasoningTag: 'reasoning' },
      ]),
    },
    { fake },
  );
  ({ cookie } = await app.signIn());
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
  await tagged?.close();
});

/** Content deltas cut at awkward places: inside the tags themselves, and across the boundary to the answer. */
const rawThinking =
  (open: string, close: string): Script =>
  (r) => {
    const whole = `${open}\nOkay, the user asks about tides.\nSix o'clock.\n${close}\n\nHigh tide is at six.`;
    // Every 3 characters: each tag arrives in pieces ("<th", "ink", ">\nO"…).
    for (let i = 0; i < whole.length; i += 3) r.text(whole.slice(i, i + 3));
    r.finish('stop', { prompt_tokens: 9, completion_tokens: 30 });
  };

it('<think> inside content deltas, split across chunks, becomes a reasoning Part; the text is the answer alone', async () => {
  const { conversationId } = await setupConversation(app, cookie, [
    { name: 'Tide', provider: 'fake', model: 'deepseek-r1' },
  ]);
  const ask = async (text: string) => {
    fake.enqueue(rawThinking('<think>', '</think>'));
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text } }),
    );
    const reply = (await messages(app, cookie, conversationId)).at(-1)!;
    return { frames, reply, streamed: foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : []))) };
  };
  const { reply, streamed, frames } = await ask('When is high tide?');
  expect(reply.status).toBe('complete');
  expect(reply.parts).toEqual([
    { type: 'reasoning', text: "\nOkay, the user asks about tides.\nSix o'clock.\n" },
    { type: 'text', text: '\n\nHigh tide is at six.' },
  ]);
  expect(streamed).toEqual(reply.parts);
  expect(reply.text).toBe('\n\nHigh tide is at six.');
  // No text frame ever carried a tag or a word of the reasoning.
  const textFrames = frames.flatMap((f) =>
    f.type === 'part' && (f.part as { type: string }).type === 'text'
      ? [(f.part as { text: string }).text]
      : [],
  );
  expect(textFrames.join('')).not.toMatch(/think|tides|o'clock/);

  // The next turn sends the reply back as its text alone.
  const second = await ask('Sure?');
  expect(second.reply.status).toBe('complete');
  const history = JSON.stringify(fake.requests.at(-1)!.body.messages);
  expect(history).toContain('High tide is at six.');
  expect(history).not.toContain('the user asks about tides');
  expect(history).not.toContain('think>');
});

it('the tag is set per compatible endpoint', async () => {
  tagged.enqueue(rawThinking('<reasoning>', '</reasoning>'));
  const { reply } = await askNpc(app, cookie, { provider: 'tagged', model: 'qwq' }, tagged);
  expect(reply.parts.map((p) => (p as { type: string }).type)).toEqual(['reasoning', 'text']);
  expect(reply.text).toBe('\n\nHigh tide is at six.');
});

it('a reasoning tag that is not a tag name is refused at start, with a sentence that says so', () => {
  expect(() =>
    loadConfig({
      COMPATIBLE_PROVIDERS: JSON.stringify([
        { id: 'x', baseURL: 'http://x.test/v1', reasoningTag: '<think>' },
      ]),
    }),
  ).toThrow(/reasoning tag is a tag name/);
});
