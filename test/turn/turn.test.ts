import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Frame, foldParts } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';

let app: TestApp;
let cookie: string;

beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

async function newConversation(npc: Record<string, unknown> = {}) {
  const r1 = await app.api('/api/npcs', { cookie, body: { name: 'Ada', jobTitle: 'Librarian', ...npc } });
  expect(r1.status).toBe(201);
  const { npc: created } = (await r1.json()) as { npc: { id: string } };
  const r2 = await app.api('/api/conversations', { cookie, body: { npcIds: [created.id] } });
  expect(r2.status).toBe(201);
  const { conversation } = (await r2.json()) as { conversation: { id: string } };
  return { npcId: created.id, conversationId: conversation.id };
}

describe('a turn, clean path', () => {
  it('streams start, parts and finish, and stores what was streamed', async () => {
    const { conversationId } = await newConversation();
    app.fake.enqueue(
      textScript('Hello there, traveller. Welcome to the library.', {
        prompt_tokens: 11,
        completion_tokens: 9,
      }),
    );
    const res = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Hi Ada!' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    const frames = await collectFrames(res);
    expect(frames[0]?.type).toBe('start');
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
    const start = frames[0] as Extract<Frame, { type: 'start' }>;
    const streamed = foldParts(frames.filter((f) => f.type === 'part').map((f) => f.part));
    expect(streamed).toEqual([{ type: 'text', text: 'Hello there, traveller. Welcome to the library.' }]);

    const read = await app.api(`/api/conversations/${conversationId}`, { cookie });
    const body = (await read.json()) as {
      conversation: { title: string };
      messages: import('../support/turns.ts').StoredMessage[];
    };
    expect(body.conversation.title).toBe('Hi Ada!');
    expect(body.messages.map((m) => m.id)).toEqual([start.playerMessageId, start.messageId]);
    const reply = body.messages[1]!;
    expect(reply.parts).toEqual(streamed);
    expect(reply.status).toBe('complete');
    expect(reply.usage).toMatchObject({ inputTokens: 11, outputTokens: 9 });
    expect(reply.provider).toBe('fake');
    expect(reply.model).toBe('fake-model');
  });
});
