import { expect } from 'vitest';
import { type Frame, foldParts } from '../../src/parts/index.ts';
import type { TestApp } from './app.ts';
import { collectFrames } from './sse.ts';
import { messages, setupConversation } from './turns.ts';

/**
 * One Player Message to a new NPC of `npc`'s Provider and Model, answered by whatever the fake Provider has
 * queued (`calls` requests of it): the frames folded as the browser folds them, the stored reply, and the
 * finish and error frames.
 */
export async function askNpc(
  app: TestApp,
  cookie: string,
  npc: Record<string, unknown>,
  provider: { requests: unknown[] },
  { text = 'When is high tide?', calls = 1 } = {},
) {
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Tide', ...npc }]);
  const before = provider.requests.length;
  const res = await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text } });
  expect(res.status).toBe(200);
  const frames = await collectFrames(res);
  const reply = (await messages(app, cookie, conversationId)).find((m) => m.role === 'npc')!;
  expect(provider.requests.length).toBe(before + calls);
  const streamed = foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])));
  const finish = frames.find((f): f is Extract<Frame, { type: 'finish' }> => f.type === 'finish');
  const error = frames.find((f): f is Extract<Frame, { type: 'error' }> => f.type === 'error');
  return { frames, streamed, reply, finish, error };
}
