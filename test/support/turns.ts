import { expect } from 'vitest';
import type { Frame } from '../../src/parts/index.ts';
import type { TestApp } from './app.ts';
import { readFrames } from './sse.ts';

export interface StoredMessage {
  id: string;
  seq: string;
  role: 'player' | 'npc';
  npcName: string | null;
  parts: unknown[];
  text: string;
  status: string;
  error: string | null;
  usage: Record<string, number | null> | null;
  provider: string | null;
  model: string | null;
}

/** Creates NPCs (by name) and a Conversation with them, through the HTTP API. */
export async function setupConversation(
  app: TestApp,
  cookie: string,
  npcs: Record<string, unknown>[] = [{ name: 'Ada', jobTitle: 'Librarian' }],
) {
  const npcIds: string[] = [];
  for (const npc of npcs) {
    const res = await app.api('/api/npcs', { cookie, body: npc });
    expect(res.status).toBe(201);
    npcIds.push(((await res.json()) as { npc: { id: string } }).npc.id);
  }
  const res = await app.api('/api/conversations', { cookie, body: { npcIds } });
  expect(res.status).toBe(201);
  const conversationId = ((await res.json()) as { conversation: { id: string } }).conversation.id;
  return { conversationId, npcIds };
}

export async function messages(
  app: TestApp,
  cookie: string,
  conversationId: string,
): Promise<StoredMessage[]> {
  const res = await app.api(`/api/conversations/${conversationId}?limit=200`, { cookie });
  expect(res.status).toBe(200);
  return ((await res.json()) as { messages: StoredMessage[] }).messages;
}

/**
 * Sends a Message and reads frames until `stopWhen` says to stop, then presses Stop as the web app does (POST
 * …/stop for the reply being written) and reads on to the end of the stream. Returns the frames the client saw.
 * With `close`, the client instead just goes away (closes the stream), which does not stop the reply.
 */
export async function sendAndStop(
  app: TestApp,
  cookie: string,
  conversationId: string,
  text: string,
  stopWhen: (frames: Frame[]) => boolean | Promise<boolean>,
): Promise<Frame[]> {
  const res = await fetch(`${app.url}/api/conversations/${conversationId}/messages`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  expect(res.status).toBe(200);
  const frames: Frame[] = [];
  let stopping: Promise<Response> | undefined;
  for await (const frame of readFrames(res)) {
    frames.push(frame);
    if (!stopping && (await stopWhen(frames))) {
      const reply = frames.findLast((f) => f.type === 'start');
      if (reply?.type !== 'start') throw new Error('stopWhen said stop before the reply started');
      stopping = app.api(`/api/conversations/${conversationId}/messages/${reply.messageId}/stop`, {
        method: 'POST',
        cookie,
      });
    }
  }
  if (stopping) expect((await stopping).status).toBe(200);
  return frames;
}

/** Waits until the reply is no longer streaming (the server persists after the client has gone). */
export async function settled(
  app: TestApp,
  cookie: string,
  conversationId: string,
): Promise<StoredMessage[]> {
  for (let i = 0; i < 200; i++) {
    const list = await messages(app, cookie, conversationId);
    if (!list.some((m) => m.status === 'streaming')) return list;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('reply never settled');
}
