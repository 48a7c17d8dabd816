import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { messages } from '../support/turns.ts';

// Issue 29: a Conversation exported and imported again brings its NPC whole — every card field (greeting,
// alternate greetings, personality…) and its own lorebook — not only a name and a prompt.
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
}, 60_000);
afterAll(() => app?.close());

const card = {
  spec: 'chara_card_v3',
  spec_version: '3.0',
  data: {
    name: 'Maren',
    description: `The lantern-keeper. ${'The lanterns hum at dusk. '.repeat(200)}`,
    personality: 'watchful',
    scenario: '{{user}} wakes on a raft.',
    first_mes: '"Awake at last, {{user}}?"',
    mes_example: '<START>\n{{user}}: Who?\n{{char}}: The keeper.',
    creator_notes: 'notes',
    system_prompt: 'Write as {{char}}.',
    post_history_instructions: 'Stay in the marsh.',
    alternate_greetings: ['"Another night."', '"You again."'],
    tags: ['marsh'],
    creator: 'an author',
    character_version: '2.1',
    extensions: { world: 'Fenmoor', depth_prompt: { depth: 4, prompt: 'p' } },
    nickname: 'Mar',
    group_only_greetings: [],
    character_book: {
      name: 'Fenmoor',
      scan_depth: 3,
      entries: [
        {
          keys: ['/lanterns?/i'],
          content: 'LORE-LANTERN',
          enabled: true,
          insertion_order: 1,
          extensions: {},
        },
      ],
    },
  },
};

type Export = { version: number; npcs: Record<string, unknown>[]; messages: unknown[] };

it('an exported Conversation imports back, for another Player too, with its NPC’s card fields and lorebook', async () => {
  const { cookie } = await app.signIn();
  const imported = await fetch(`${app.url}/api/npcs/import`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body: JSON.stringify(card),
  });
  expect(imported.status).toBe(201);
  const { npc } = (await imported.json()) as { npc: { id: string } };
  const made = await app.api('/api/conversations', { cookie, body: { npcIds: [npc.id] } });
  const { conversation } = (await made.json()) as { conversation: { id: string } };
  const file = (await (
    await app.api(`/api/conversations/${conversation.id}/export`, { cookie })
  ).json()) as Export;
  expect(file.version).toBe(3);
  expect(file.npcs[0]).toMatchObject({
    name: 'Maren',
    greeting: card.data.first_mes,
    alternateGreetings: card.data.alternate_greetings,
    personality: 'watchful',
    postHistoryInstructions: 'Stay in the marsh.',
    creator: 'an author',
    characterVersion: '2.1',
    extensions: card.data.extensions,
    cardExtra: { nickname: 'Mar' },
    lorebook: card.data.character_book,
  });
  expect(file.npcs[0]).not.toHaveProperty('id');
  expect(file.messages).toHaveLength(3); // the greeting and its two alternates

  // The same Player: their own Maren is the file's, so none is made.
  const send = (as: string) =>
    fetch(`${app.url}/api/conversations/import`, {
      method: 'POST',
      headers: { cookie: as, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
      body: JSON.stringify(file),
    });
  const mine = (await (await send(cookie)).json()) as { createdNpcs: string[] };
  expect(mine.createdNpcs).toEqual([]);

  // Another Player gets Maren whole: the card she was made from, her lorebook, her greeting as the first Message.
  const { cookie: other } = await app.signIn();
  const res = await send(other);
  expect(res.status).toBe(201);
  const theirs = (await res.json()) as {
    conversation: { id: string };
    participants: { id: string }[];
    createdNpcs: string[];
  };
  expect(theirs.createdNpcs).toEqual(['Maren']);
  const theirNpc = theirs.participants[0]!.id;
  const exportedCard = async (as: string, id: string) =>
    ((await (await app.api(`/api/npcs/${id}/card?spec=v3`, { cookie: as })).json()) as { data: unknown })
      .data;
  expect(await exportedCard(other, theirNpc)).toEqual(await exportedCard(cookie, npc.id));
  const again = (await (
    await app.api(`/api/conversations/${theirs.conversation.id}/export`, { cookie: other })
  ).json()) as Export;
  expect(again.npcs).toEqual(file.npcs);
  expect((await messages(app, other, theirs.conversation.id))[0]).toMatchObject({
    role: 'npc',
    npcName: 'Maren',
  });

  // A changed greeting is another character: not silently swapped for the Player's Maren.
  const changed = { ...file, npcs: [{ ...file.npcs[0], greeting: 'Hello.' }] };
  const third = await fetch(`${app.url}/api/conversations/import`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body: JSON.stringify(changed),
  });
  expect(((await third.json()) as { createdNpcs: string[] }).createdNpcs).toEqual(['Maren']);
});

it('a version 2 file (no card fields) still imports, matching the Player’s NPC by name and prompt', async () => {
  const { cookie } = await app.signIn();
  const made = await app.api('/api/npcs', { cookie, body: { name: 'Ada', prompt: 'p', greeting: 'Hi' } });
  expect(made.status).toBe(201);
  const file = {
    format: 'agentsville.conversation',
    version: 2,
    conversation: { title: 't', createdAt: new Date().toISOString() },
    npcs: [{ name: 'Ada', jobTitle: '', description: '', prompt: 'p' }],
    messages: [],
  };
  const res = await fetch(`${app.url}/api/conversations/import`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body: JSON.stringify(file),
  });
  expect(res.status).toBe(201);
  expect(((await res.json()) as { createdNpcs: string[] }).createdNpcs).toEqual([]);
});
