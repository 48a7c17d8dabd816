import { afterAll, beforeAll, expect, it } from 'vitest';
import { foldParts } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  // No Provider key at all: the Village falls back to the scripted demo Model.
  app = await startTestApp({}, { COMPATIBLE_PROVIDERS: '' }, { serverDefaults: true });
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

it('offers the demo Model when no key is configured, and says it is a demo', async () => {
  const res = await app.api('/api/village', { cookie });
  const body = (await res.json()) as { settings: Record<string, unknown>; providers: unknown[] };
  expect(body.providers).toEqual([{ id: 'demo', kind: 'demo' }]);
  expect(body.settings).toMatchObject({ defaultProvider: 'demo', defaultModel: 'scripted-demo' });
});

it('streams an in-character scripted reply, with reasoning when thinking is on', async () => {
  const { conversationId } = await setupConversation(app, cookie, [
    { name: 'Marigold', jobTitle: 'Gardener', thinking: true },
  ]);
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'What grows here?' },
    }),
  );
  expect(frames[0]).toMatchObject({ type: 'start', provider: 'demo', model: 'scripted-demo' });
  const parts = foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])));
  expect(parts.map((p) => p.type)).toEqual(['reasoning', 'text']);
  const text = parts[1]!.type === 'text' ? parts[1]!.text : '';
  expect(text).toContain('Marigold, Gardener');
  expect(text).toContain('What grows here?');
  expect(text).toMatch(/demo Model/);
  const [, reply] = await messages(app, cookie, conversationId);
  expect(reply).toMatchObject({ status: 'complete', provider: 'demo', model: 'scripted-demo' });
  expect(reply?.usage?.outputTokens).toBeGreaterThan(0);
});

it('answers without reasoning when thinking is off', async () => {
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Quiet', thinking: false }]);
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Hi' } }),
  );
  const parts = foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])));
  expect(parts.map((p) => p.type)).toEqual(['text']);
});

it('calls a granted tool once, then answers, so every Part kind can be seen offline', async () => {
  const { conversationId, npcIds } = await setupConversation(app, cookie, [
    { name: 'Tinker', thinking: true },
  ]);
  await app.api(`/api/npcs/${npcIds[0]}/grants`, {
    method: 'PUT',
    cookie,
    body: { grants: [{ kind: 'memory' }] },
  });
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Remember my name is Jo' },
    }),
  );
  const parts = foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])));
  expect(parts.map((p) => p.type)).toEqual(['reasoning', 'tool', 'text']);
  expect(parts[1]).toMatchObject({ type: 'tool', name: 'remember', state: 'done' });
});

it('is a believable character: uses a tool only when asked, takes up the Player’s words, says it is a demo once', async () => {
  const { conversationId, npcIds } = await setupConversation(app, cookie, [
    { name: 'Wren', jobTitle: 'Ferrywoman' },
  ]);
  await app.api(`/api/npcs/${npcIds[0]}/grants`, {
    method: 'PUT',
    cookie,
    body: { grants: [{ kind: 'sandbox' }, { kind: 'memory' }] },
  });
  const turn = async (text: string) => {
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text } }),
    );
    return foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])));
  };
  const first = await turn('How deep is the river tonight?');
  expect(first.map((p) => p.type)).toEqual(['text']);
  const hello = first[0]!.type === 'text' ? first[0]!.text : '';
  expect(hello).toContain('Wren, Ferrywoman');
  expect(hello).toMatch(/demo Model/);

  const second = await turn('Tell me about the lighthouse keeper');
  expect(second.map((p) => p.type)).toEqual(['text']);
  const said = second[0]!.type === 'text' ? second[0]!.text : '';
  expect(said.toLowerCase()).toMatch(/lighthouse|keeper/);
  expect(said).not.toMatch(/demo Model/);

  // Asked to run something: the sandbox runs a command made of the Player's words, then she answers with it.
  const third = await turn('Run the tally of boats, please');
  expect(third.map((p) => p.type)).toEqual(['tool', 'text']);
  expect(third[0]).toMatchObject({ type: 'tool', name: 'bash', state: 'done' });
  expect(JSON.stringify(third[0])).toContain('tally of boats');
  expect(third[1]!.type === 'text' ? third[1]!.text : '').toContain('the tool answered');
});
