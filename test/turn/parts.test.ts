import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldParts } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

describe('every Part kind over the one part frame', () => {
  it('streams reasoning, a tool call and text in order; reload equals stream', async () => {
    const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada', thinking: true }]);
    app.fake.enqueue((r) => {
      r.reasoning('The Player wants ');
      r.reasoning('a file.');
      r.toolCallStart(0, 'call_1', 'read_file', '{"pa');
      r.toolCallArgs(0, 'th":"/notes.txt"}');
      r.finish('tool_calls', {
        prompt_tokens: 20,
        completion_tokens: 12,
        completion_tokens_details: { reasoning_tokens: 4 },
      });
    });
    // The call fails (no such tool is granted); the model is told so in a second step and says nothing more.
    app.fake.enqueue((r) => r.finish('stop', { prompt_tokens: 30, completion_tokens: 0 }));
    const res = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Read my notes' },
    });
    const frames = await collectFrames(res);
    const streamed = foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])));
    expect(streamed[0]).toEqual({ type: 'reasoning', text: 'The Player wants a file.' });
    expect(streamed[1]).toMatchObject({
      type: 'tool',
      id: 'call_1',
      name: 'read_file',
      input: { path: '/notes.txt' },
    });

    const [player, reply] = await messages(app, cookie, conversationId);
    expect(player?.text).toBe('Read my notes');
    // The stored reply is the streamed one, plus the settlement of a call no tool answered.
    expect(reply?.parts.length).toBe(streamed.length);
    expect(reply?.parts[0]).toEqual(streamed[0]);
    expect(reply?.parts[1]).toMatchObject({ type: 'tool', id: 'call_1', state: 'failed' });
    expect(reply?.text).toBe('');
    // Usage is the total over both steps.
    expect(reply?.usage).toMatchObject({ inputTokens: 50, outputTokens: 12, reasoningTokens: 4 });
    const second = JSON.stringify(app.fake.requests.at(-1)?.body.messages);
    expect(second).toContain('read_file');
    // The thinking switch reached the Provider.
    expect(app.fake.requests.at(-1)?.body.reasoning_effort).toBe('medium');
  });

  it('keeps reasoning out of the flat text and the title', async () => {
    const { conversationId } = await setupConversation(app, cookie, [{ name: 'Bo', thinking: true }]);
    app.fake.enqueue((r) => {
      r.reasoning('PRIVATE THOUGHT');
      r.text('Public answer.');
      r.finish();
    });
    await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Q' } }),
    );
    const [, reply] = await messages(app, cookie, conversationId);
    expect(reply?.text).toBe('Public answer.');
    expect(JSON.stringify(reply?.parts)).toContain('PRIVATE THOUGHT');
  });

  it('keeps what jsonb cannot store, made storable: NUL and half surrogate pairs from the Provider or the Player', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    app.fake.enqueue((r) => {
      r.text('nul:\u0000 ');
      r.text('half:\uD83D end');
      r.finish();
    });
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: 'odd \u0000 input' },
      }),
    );
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
    const [player, reply] = await messages(app, cookie, conversationId);
    expect(player?.text).toBe('odd \uFFFD input');
    expect(reply).toMatchObject({ status: 'complete', text: 'nul:\uFFFD half:\uFFFD end' });
  });
});
