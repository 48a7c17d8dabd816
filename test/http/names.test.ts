import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { upload } from '../support/files.ts';
import { setupConversation } from '../support/turns.ts';

// Issue 25, item 7: names are stored without bidi and control characters, at every edge they come in by.
let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

it('an upload, an NPC and a Conversation keep their names without bidi or control characters', async () => {
  const npc = await app.api('/api/npcs', { cookie, body: { name: '\u2067Ada\u2069\u202E\u0007' } });
  expect(npc.status).toBe(201);
  const { npc: made } = (await npc.json()) as { npc: { id: string; name: string } };
  expect(made.name).toBe('Ada');
  // Nothing but hidden characters is no name at all.
  const empty = await app.api('/api/npcs', { cookie, body: { name: '\u202E\u200B' } });
  expect(empty.status).toBe(400);

  const created = await app.api('/api/conversations', {
    cookie,
    body: { npcIds: [made.id], title: 'Plans\u202Etxt.exe' },
  });
  const { conversation } = (await created.json()) as { conversation: { id: string; title: string } };
  expect(conversation.title).toBe('Planstxt.exe');
  const renamed = await app.api(`/api/conversations/${conversation.id}`, {
    method: 'PATCH',
    cookie,
    body: { title: 'Maps\u2066\u000d\u000aand more' },
  });
  expect(((await renamed.json()) as { conversation: { title: string } }).conversation.title).toBe(
    'Maps  and more',
  );

  const { conversationId } = await setupConversation(app, cookie);
  const res = await upload(app, cookie, conversationId, 'ev\u202egnp.html', Buffer.from('<p>hi</p>'));
  expect(res.status).toBe(201);
  expect(((await res.json()) as { name: string }).name).toBe('evgnp.html');
});
