import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { titleFrom, todaysSpend } from '../../src/conversations/index.ts';
import { cleanTitle } from '../../src/turn/title.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({}, { SUMMARISED_TITLES: 'true' });
}, 60_000);
afterAll(() => app?.close());
beforeEach(async () => {
  app.fake.clear();
  app.fake.summaryText = '"**Tide** tables at dawn."';
  await app.db.sql`update village_settings set player_daily_tokens = 2000000`;
});

const send = async (cookie: string, conversationId: string, text: string) =>
  collectFrames(await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text } }));
const titleOf = async (cookie: string, id: string) =>
  (
    (await (await app.api(`/api/conversations/${id}`, { cookie })).json()) as {
      conversation: { title: string };
    }
  ).conversation.title;
const titleCalls = () => app.fake.requests.filter((r) => !r.body.stream);

it('after the first exchange the Conversation’s Model titles it, and the Player is charged for the call', async () => {
  const { cookie, playerId } = await app.signIn();
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }]);
  const before = titleCalls().length;
  app.fake.enqueue(textScript('At six, with the full moon.', { prompt_tokens: 30, completion_tokens: 7 }));
  await send(cookie, conversationId, '*When* is high tide at **Porthleven**?');

  // One non-streaming call to the same Model, bounded, carrying the exchange.
  const calls = titleCalls().slice(before);
  expect(calls).toHaveLength(1);
  const request = calls[0]!.body as unknown as {
    model: string;
    max_tokens?: number;
    messages: { role: string; content: string }[];
  };
  expect(request.model).toBe('fake-model');
  expect(request.max_tokens).toBe(40);
  const asked = JSON.stringify(request.messages);
  expect(asked).toContain('When* is high tide');
  expect(asked).toContain('Ada: At six, with the full moon.');
  // Quotes, Markdown marks and the full stop are gone.
  expect(await titleOf(cookie, conversationId)).toBe('Tide tables at dawn');
  // Charged through the turn's budget: the reply's 37 tokens and the title's 12 (the fake reports 10 + 2).
  expect((await todaysSpend(app.db.sql, playerId)).mine).toBe(37 + 12);

  // Only the first exchange: the next Message asks for no title.
  app.fake.enqueue(textScript('Twice a day.'));
  await send(cookie, conversationId, 'And low tide?');
  expect(titleCalls().length).toBe(before + 1);
  expect(await titleOf(cookie, conversationId)).toBe('Tide tables at dawn');
});

it('a title the Player chose is kept, and a spent budget asks for none', async () => {
  const { cookie, playerId } = await app.signIn();
  // Given at creation: never replaced.
  const npc = await app.api('/api/npcs', { cookie, body: { name: 'Bo' } });
  const npcId = ((await npc.json()) as { npc: { id: string } }).npc.id;
  const made = await app.api('/api/conversations', { cookie, body: { npcIds: [npcId], title: 'My tides' } });
  const mine = ((await made.json()) as { conversation: { id: string } }).conversation.id;
  const asked = titleCalls().length;
  await send(cookie, mine, 'When is high tide?');
  expect(await titleOf(cookie, mine)).toBe('My tides');
  expect(titleCalls().length).toBe(asked);

  // The reply spends the day's budget: the title call is not made, and the first words stay, without marks.
  const spent = (await todaysSpend(app.db.sql, playerId)).mine;
  await app.db.sql`update village_settings set player_daily_tokens = ${spent + 20}`;
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Cy' }]);
  const before = titleCalls().length;
  app.fake.enqueue(textScript('Soon.', { prompt_tokens: 30, completion_tokens: 1 }));
  await send(cookie, conversationId, 'Is the tide *really* coming?');
  expect(titleCalls().length).toBe(before);
  expect(await titleOf(cookie, conversationId)).toBe('Is the tide really coming?');
});

it('titles made from words lose their Markdown marks; a Model’s answer is made one line', () => {
  expect(titleFrom('*asterisks* and **bold** and `code`')).toBe('asterisks and bold and code');
  expect(titleFrom('# A [link](https://x.example) here')).toBe('A link here');
  expect(titleFrom('snake_case stays, 2 * 3 too')).toBe('snake_case stays, 2 * 3 too');
  expect(cleanTitle('Title: "Harbour Tides"\nBecause it is about tides.')).toBe('Harbour Tides');
  expect(cleanTitle('""')).toBeUndefined();
});
