import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

// Every option the turn hands the AI SDK, as it hands it (the real call still runs).
const calls = vi.hoisted(() => [] as Record<string, unknown>[]);
vi.mock('ai', async (original) => {
  const ai = await original<typeof import('ai')>();
  return {
    ...ai,
    streamText: (options: Parameters<typeof ai.streamText>[0]) => {
      calls.push(options as unknown as Record<string, unknown>);
      return ai.streamText(options);
    },
    // A reply's call (turn/run.ts: one consumer, the single-consumer form).
    experimental_streamTextLowMemory: (
      options: Parameters<typeof ai.experimental_streamTextLowMemory>[0],
    ) => {
      calls.push(options as unknown as Record<string, unknown>);
      return ai.experimental_streamTextLowMemory(options);
    },
  };
});

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({}, { OTEL_TELEMETRY: 'true' });
}, 60_000);
afterAll(() => app?.close());

it('OTEL_TELEMETRY is one setting, off unless said', () => {
  expect(loadConfig({}).telemetry).toBe(false);
  expect(loadConfig({ OTEL_TELEMETRY: 'true' }).telemetry).toBe(true);
});

it("with OTEL_TELEMETRY on, a turn's Provider call asks the AI SDK for spans, without what was said", async () => {
  const { cookie } = await app.signIn();
  const { conversationId } = await setupConversation(app, cookie);
  app.fake.enqueue(textScript('Hello.'));
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Hi' } }),
  );
  expect(frames.at(-1)).toMatchObject({ type: 'finish' });
  expect(calls.at(-1)?.telemetry).toEqual({
    isEnabled: true,
    functionId: 'agentsville.turn',
    recordInputs: false,
    recordOutputs: false,
  });
});
