import { APICallError } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/parts/index.ts';
import { describeFailure } from '../../src/turn/failures.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import type { Script } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { settled, setupConversation } from '../support/turns.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

// The fake asks for a 10 ms wait between tries (Retry-After in milliseconds, which the AI SDK honours), so a
// retried turn takes milliseconds here instead of the 2 s + 4 s backoff.
const soon = { 'retry-after-ms': '10' };
const refuse =
  (status: number, message: string, headers: Record<string, string> = soon): Script =>
  (r) =>
    r.fail(status, message, headers);

async function turn(...scripts: Script[]) {
  const { conversationId } = await setupConversation(app, cookie);
  const before = app.fake.requests.length;
  app.fake.enqueue(...scripts);
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Hello?' } }),
  );
  const [, reply] = await settled(app, cookie, conversationId);
  return { frames, reply: reply!, calls: app.fake.requests.length - before };
}
const errorOf = (frames: Frame[]) =>
  frames.find((f) => f.type === 'error') as { code: string; message: string } | undefined;

describe('before the first token, what is worth retrying is retried', () => {
  it('a 429 then a 529 then an answer: the Player sees only the answer', async () => {
    const { frames, reply, calls } = await turn(
      refuse(429, 'Rate limit reached for requests'),
      refuse(529, 'Overloaded'),
      (r) => {
        r.text('Here I am.');
        r.finish();
      },
    );
    expect(calls).toBe(3);
    expect(errorOf(frames)).toBeUndefined();
    expect(reply).toMatchObject({ status: 'complete', text: 'Here I am.', error: null });
  });

  it('429 three times: failed, said as a rate limit, naming the Provider and the tries', async () => {
    const { frames, reply, calls } = await turn(...Array.from({ length: 3 }, () => refuse(429, 'Slow down')));
    expect(calls).toBe(3);
    expect(errorOf(frames)).toMatchObject({ code: 'PROVIDER_RATE_LIMITED' });
    expect(errorOf(frames)!.message).toMatch(
      /"fake" is limiting requests \(429: Slow down\), still after 3 tries/,
    );
    expect(reply).toMatchObject({ status: 'failed', parts: [], error: errorOf(frames)!.message });
  });

  it('529 and 503 to the end: said as overloaded', async () => {
    const { frames } = await turn(refuse(529, 'Overloaded'), refuse(503, 'Busy'), refuse(529, 'Overloaded'));
    expect(errorOf(frames)).toMatchObject({ code: 'PROVIDER_OVERLOADED' });
    expect(errorOf(frames)!.message).toContain('still after 3 tries');
  });
});

describe('what is not worth retrying is said at once', () => {
  it('a refused key (401): one call, the Provider named, its words (which may echo the key) not repeated', async () => {
    const { frames, calls } = await turn(refuse(401, 'Incorrect API key provided: sk-abc…xyz'));
    expect(calls).toBe(1);
    expect(errorOf(frames)).toMatchObject({ code: 'PROVIDER_AUTH' });
    expect(errorOf(frames)!.message).toContain('"fake" refused this Village\'s API key (401)');
    expect(errorOf(frames)!.message).not.toContain('sk-abc');
  });

  it('a history longer than the Model takes: said as such, with what to do', async () => {
    const { frames, calls } = await turn(
      refuse(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
      ),
    );
    expect(calls).toBe(1);
    expect(errorOf(frames)).toMatchObject({ code: 'CONTEXT_TOO_LONG' });
    expect(errorOf(frames)!.message).toMatch(/longer than the Model "fake-model" accepts.*history budget/);
  });

  it('a Model the Provider does not have (404)', async () => {
    const { frames } = await turn(refuse(404, 'The model `fake-model` does not exist'));
    expect(errorOf(frames)).toMatchObject({ code: 'MODEL_NOT_FOUND' });
    expect(errorOf(frames)!.message).toContain('does not exist');
  });
});

it('a reply the Provider withholds (content filter): what came is kept, and it is said what happened', async () => {
  const { frames, reply } = await turn((r) => {
    r.text('Well, the recipe ');
    r.finish('content_filter', { prompt_tokens: 9, completion_tokens: 4 });
  });
  expect(errorOf(frames)).toMatchObject({ code: 'PROVIDER_BLOCKED' });
  expect(errorOf(frames)!.message).toContain(
    'ended this reply itself (a safety filter or a refusal); what it sent is kept',
  );
  expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'failed' });
  expect(reply).toMatchObject({ status: 'failed', text: 'Well, the recipe ' });
  expect(reply.usage).toMatchObject({ inputTokens: 9, outputTokens: 4 });
});

describe('what a failure may say (pure)', () => {
  it('never repeats a key or an address from our own fetch failing, and clips what a Provider says', () => {
    const credentials = new TypeError(
      'Request cannot be constructed from a URL that includes credentials: https://user:SECRET-KEY@llm.internal/v1',
    );
    const refused = new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED', address: '10.0.0.7' } });
    for (const e of [credentials, refused]) {
      const { message } = describeFailure(e, 'local', 'm');
      expect(message).not.toMatch(/SECRET-KEY|llm\.internal|10\.0\.0\.7/);
      expect(message).toContain('"local"');
    }
    expect(describeFailure(refused, 'local', 'm').message).toContain('ECONNREFUSED');
    const chatty = new APICallError({
      message: `Bad request to https://u:KEY2@host/v1 ${'x'.repeat(5000)}`,
      url: 'https://host/v1',
      requestBodyValues: {},
      statusCode: 400,
    });
    const { message } = describeFailure(chatty, 'p', 'm');
    expect(message).not.toContain('KEY2');
    expect(message.length).toBeLessThan(400);
  });
});
