import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { pngTextChunks, pngWithoutText, pngWithText, withText } from '../../src/cards/png.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { picture } from '../support/picture.ts';
import { collectFrames } from '../support/sse.ts';
import { messages } from '../support/turns.ts';

// Issue 29: characters as their makers wrote them. A card shaped like SillyTavern's bundled Seraphina (written
// here) keeps every field; its greeting opens a new Conversation as a real Message, alternates as its siblings;
// its lorebook enters the prompt the fake Provider receives only when a key appears, and only for its NPC.
let app: TestApp;
let cookie: string;
let handle: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
  handle = ((await (await app.api('/api/me', { cookie })).json()) as { handle: string }).handle;
}, 60_000);
afterAll(() => app?.close());
beforeEach(() => app.fake.clear());

const upload = (body: Uint8Array | string, query = '') =>
  fetch(`${app.url}/api/npcs/import${query}`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body,
  });
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
type Npc = Record<string, unknown> & { id: string; name: string };

const card = {
  spec: 'chara_card_v2',
  spec_version: '2.0',
  data: {
    name: 'Maren',
    description: `{{char}} keeps the marsh lanterns lit for {{user}}. ${'The lanterns hum at dusk. '.repeat(120)}`,
    personality: 'watchful, kind',
    scenario: '{{user}} wakes on a raft. {{random::a::b}}',
    first_mes: '*{{char}} leans over the raft.* "Awake at last, {{user}}?"',
    mes_example: '<START>\n{{user}}: Who are you?\n{{char}}: The lantern-keeper.',
    creator_notes: 'Made for the marsh contest.',
    system_prompt: '{{original}} Write as {{char}}.',
    post_history_instructions: 'Stay in the marsh, {{char}}.',
    alternate_greetings: ['"Another night on the water."', '"You again, {{user}}."'],
    tags: ['fantasy', 'marsh'],
    creator: 'a marsh author',
    character_version: '1.0.0',
    extensions: { talkativeness: '0.5', fav: false, world: 'Fenmoor' },
    character_book: {
      name: 'Fenmoor',
      entries: [
        {
          id: 0,
          keys: ['lantern', 'lanterns'],
          secondary_keys: [],
          content: 'LORE-LANTERN: the lanterns keep the drowned away.',
          constant: false,
          selective: false,
          insertion_order: 100,
          enabled: true,
          position: 'before_char',
          extensions: { position: 0, probability: null, useProbability: false },
        },
        {
          id: 1,
          keys: ['heron'],
          secondary_keys: ['white'],
          selective: true,
          content: 'LORE-HERON: white herons are omens.',
          constant: false,
          insertion_order: 100,
          enabled: true,
          extensions: { selectiveLogic: 0 },
        },
        {
          id: 2,
          keys: ['ferry'],
          content: 'LORE-FERRY: the ferry runs at dawn, {{user}}.',
          insertion_order: 100,
          enabled: true,
          position: 'after_char',
          // SillyTavern's @depth: into the history, one message up from the newest, as a system message.
          extensions: { position: 4, depth: 1, role: 0 },
        },
      ],
    },
  },
};

const systemOf = (i = -1) => {
  const req = app.fake.requests.filter((r) => r.body.stream).at(i)!;
  return req.body.messages;
};
const say = async (conversationId: string, text: string) => {
  const res = await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text } });
  expect(res.status).toBe(200);
  const frames = await collectFrames(res);
  expect(frames.filter((f) => f.type === 'error')).toEqual([]);
};

let maren: Npc;

it('a card keeps every field; the same card again is offered as an update, not a second NPC', async () => {
  const res = await upload(pngWithText({ chara: b64(card) }));
  expect(res.status).toBe(201);
  maren = ((await res.json()) as { npc: Npc }).npc;
  const got = ((await (await app.api(`/api/npcs/${maren.id}`, { cookie })).json()) as { npc: Npc }).npc;
  expect(got).toMatchObject({
    description: card.data.description,
    personality: 'watchful, kind',
    scenario: card.data.scenario,
    greeting: card.data.first_mes,
    alternateGreetings: card.data.alternate_greetings,
    exampleMessages: card.data.mes_example,
    prompt: card.data.system_prompt,
    postHistoryInstructions: card.data.post_history_instructions,
    creator: 'a marsh author',
    creatorNotes: 'Made for the marsh contest.',
    characterVersion: '1.0.0',
    tags: ['fantasy', 'marsh'],
    extensions: { talkativeness: '0.5', fav: false, world: 'Fenmoor' },
  });
  const again = await upload(JSON.stringify(card));
  expect(again.status).toBe(409);
  const { error } = (await again.json()) as {
    error: { code: string; details: { npcId: string; update: string } };
  };
  expect(error.code).toBe('CARD_ALREADY_IMPORTED');
  expect(error.details.npcId).toBe(maren.id);
  const changed = { ...card, data: { ...card.data, character_version: '1.1.0' } };
  const updated = await upload(JSON.stringify(changed), `?update=${maren.id}`);
  expect(updated.status).toBe(200);
  expect(((await updated.json()) as { npc: Npc; updated: boolean }).npc).toMatchObject({
    id: maren.id,
    characterVersion: '1.1.0',
  });
  const count = await app.db.sql`select count(*)::int as n from npcs where name = 'Maren'`;
  expect(count[0]!.n).toBe(1);
  // The update replaced the card's lorebook, it did not add a second one.
  const books = await app.db.sql`select count(*)::int as n from npc_lorebooks where npc_id = ${maren.id}`;
  expect(books[0]!.n).toBe(1);
});

it('a new Conversation opens on the greeting, a real Message; alternate greetings are its siblings', async () => {
  const res = await app.api('/api/conversations', { cookie, body: { npcIds: [maren.id] } });
  const { conversation } = (await res.json()) as { conversation: { id: string } };
  const shown = await messages(app, cookie, conversation.id);
  expect(shown).toHaveLength(1);
  expect(shown[0]).toMatchObject({
    role: 'npc',
    npcName: 'Maren',
    status: 'complete',
    text: `*Maren leans over the raft.* "Awake at last, ${handle}?"`,
  });
  expect((shown[0] as unknown as { branch: { count: number } }).branch.count).toBe(3);
  // The greeting is history: the Model sees it as its own first turn.
  await say(conversation.id, 'Where am I?');
  const sent = systemOf();
  expect(sent[1]).toEqual({ role: 'assistant', content: shown[0]!.text });
  expect(sent[2]).toMatchObject({ role: 'user', content: 'Where am I?' });
});

it('the prompt: macros expanded, unknown ones kept out, post-history instructions after the history, lore only on its key', async () => {
  const res = await app.api('/api/conversations', { cookie, body: { npcIds: [maren.id] } });
  const { conversation } = (await res.json()) as { conversation: { id: string } };
  await say(conversation.id, 'Tell me about the weather.');
  let sent = systemOf();
  const system = sent[0]!.content as string;
  expect(system).toContain(`Maren keeps the marsh lanterns lit for ${handle}.`);
  expect(system).toContain("Maren's personality: watchful, kind");
  expect(system).toContain(`Scenario: ${handle} wakes on a raft.`);
  expect(system).toContain('Write as Maren.');
  expect(system).toContain(`[Example chat]\n${handle}: Who are you?\nMaren: The lantern-keeper.`);
  expect(system).not.toMatch(/\{\{|the Player/);
  expect(system).not.toContain('LORE-');
  expect(sent.at(-1)).toEqual({ role: 'system', content: 'Stay in the marsh, Maren.' });
  expect(sent.at(-2)).toMatchObject({ role: 'user', content: 'Tell me about the weather.' });
  // A key in the recent window triggers its entry, and only it; a selective entry needs its secondary key too.
  await say(conversation.id, 'Why are the Lanterns lit? I saw a heron.');
  sent = systemOf();
  expect(sent[0]!.content).toContain('LORE-LANTERN');
  expect(sent[0]!.content).not.toContain('LORE-HERON');
  await say(conversation.id, 'It was a white heron.');
  expect(systemOf()[0]!.content).toContain('LORE-HERON');
  // An @depth entry goes into the history at its depth, not into the system prompt.
  await say(conversation.id, 'When does the ferry come?');
  sent = systemOf();
  expect(sent[0]!.content).not.toContain('LORE-FERRY');
  expect(sent.at(-3)).toEqual({ role: 'system', content: `LORE-FERRY: the ferry runs at dawn, ${handle}.` });
  expect(sent.at(-2)).toMatchObject({ role: 'user', content: 'When does the ferry come?' });
});

it("a lorebook is its NPC's only: another NPC asked the same gets none of it", async () => {
  const other = (await (
    await app.api('/api/npcs', {
      cookie,
      body: { name: 'Tomas', grants: [{ kind: 'memory' }] },
    })
  ).json()) as { npc: Npc };
  const res = await app.api('/api/conversations', { cookie, body: { npcIds: [other.npc.id] } });
  const { conversation } = (await res.json()) as { conversation: { id: string } };
  expect(await messages(app, cookie, conversation.id)).toHaveLength(0);
  await say(conversation.id, 'What do the lanterns and the white heron mean?');
  expect(JSON.stringify(systemOf())).not.toContain('LORE-');
  const memories = await app.db.sql`select count(*)::int as n from memories`;
  expect(memories[0]!.n).toBe(0);
});

it('exports V2 and V3 (JSON, and a PNG with both chunks) that import back as the same NPC', async () => {
  const v2 = await (await app.api(`/api/npcs/${maren.id}/card`, { cookie })).json();
  const v3 = await (await app.api(`/api/npcs/${maren.id}/card?spec=v3`, { cookie })).json();
  const png = new Uint8Array(
    await (await app.api(`/api/npcs/${maren.id}/card?format=png`, { cookie })).arrayBuffer(),
  );
  const chunks = pngTextChunks(png);
  expect(JSON.parse(Buffer.from(chunks.get('chara')!, 'base64').toString())).toEqual(v2);
  expect(JSON.parse(Buffer.from(chunks.get('ccv3')!, 'base64').toString())).toEqual(v3);
  const { agentsville: _, ...theirs } = (v2 as { data: { extensions: Record<string, unknown> } }).data
    .extensions;
  expect({ ...(v2 as { data: object }).data, extensions: theirs }).toEqual({
    ...card.data,
    character_version: '1.1.0',
  });
  const fields = (n: Npc) => {
    // The picture comes only with a PNG; ids and times are the new NPC's own.
    const { id: _i, createdAt: _c, updatedAt: _u, avatarUrl: _a, ...rest } = n;
    return rest;
  };
  for (const body of [JSON.stringify(v2), JSON.stringify(v3), png]) {
    const back = await upload(body, '?duplicate=true');
    expect(back.status).toBe(201);
    const npc = ((await back.json()) as { npc: Npc }).npc;
    const original = ((await (await app.api(`/api/npcs/${maren.id}`, { cookie })).json()) as { npc: Npc })
      .npc;
    expect(fields(npc)).toEqual(fields(original));
    const again = await (await app.api(`/api/npcs/${npc.id}/card`, { cookie })).json();
    expect(again).toEqual(v2);
  }
});

it('a World Info file imports as a lorebook, attached to the NPCs it is for', async () => {
  const wi = {
    entries: {
      '0': {
        uid: 0,
        key: ['ledger', 'ledgers'],
        keysecondary: [],
        comment: '',
        content: 'LORE-LEDGER: the abbey ledgers are kept in the crypt.',
        constant: false,
        selective: false,
        order: 100,
        position: 0,
        disable: false,
      },
    },
  };
  const asCard = await upload(JSON.stringify(wi));
  expect(asCard.status).toBe(422);
  expect(((await asCard.json()) as { error: { code: string } }).error.code).toBe('WORLD_INFO');
  const res = await fetch(`${app.url}/api/lorebooks/import?name=Abbey`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body: JSON.stringify(wi),
  });
  expect(res.status).toBe(201);
  const { lorebook } = (await res.json()) as { lorebook: { id: string; name: string; entries: number } };
  expect(lorebook).toMatchObject({ name: 'Abbey', entries: 1 });
  const tomas = (await (await app.api('/api/npcs', { cookie, body: { name: 'Brother Tomas' } })).json()) as {
    npc: Npc;
  };
  const put = await app.api(`/api/npcs/${tomas.npc.id}/lorebooks`, {
    cookie,
    method: 'PUT',
    body: { lorebookIds: [lorebook.id] },
  });
  expect(put.status).toBe(200);
  const c = (await (
    await app.api('/api/conversations', { cookie, body: { npcIds: [tomas.npc.id] } })
  ).json()) as { conversation: { id: string } };
  await say(c.conversation.id, 'What do the ledgers say?');
  expect(systemOf()[0]!.content).toContain('LORE-LEDGER');
});

it("a PNG card's picture becomes the NPC's avatar, served alone and exported back with the card", async () => {
  const pic = picture();
  const res = await upload(withText(pic, { chara: b64({ ...card, data: { ...card.data, name: 'Wren' } }) }));
  expect(res.status).toBe(201);
  const { npc } = (await res.json()) as { npc: Npc & { avatarUrl: string } };
  expect(npc.avatarUrl).toMatch(new RegExp(`^/api/npcs/${npc.id}/avatar\\?v=`));
  const served = await app.api(npc.avatarUrl, { cookie });
  if (served.status !== 200) throw new Error(`${served.status} ${await served.text()}`);
  expect(served.headers.get('content-type')).toBe('image/png');
  // The picture alone: the card's text is not served with it.
  expect(new Uint8Array(await served.arrayBuffer())).toEqual(pic);
  const exported = new Uint8Array(
    await (await app.api(`/api/npcs/${npc.id}/card?format=png`, { cookie })).arrayBuffer(),
  );
  expect(pngWithoutText(exported)).toEqual(pic);
  expect(JSON.parse(Buffer.from(pngTextChunks(exported).get('chara')!, 'base64').toString()).data.name).toBe(
    'Wren',
  );
  // Another Player cannot see it.
  const { cookie: other } = await app.signIn();
  expect((await app.api(npc.avatarUrl, { cookie: other })).status).toBe(404);
});

it("a card updated with another picture replaces the NPC's avatar, and the old picture is collected", async () => {
  const pngCard = (pic: Uint8Array) =>
    withText(pic, { chara: b64({ ...card, data: { ...card.data, name: 'Ottilie' } }) });
  const first = (await (await upload(pngCard(picture(64)))).json()) as { npc: Npc };
  const avatar = async () =>
    (await app.db.sql<{ id: string }[]>`select avatar_blob_id as id from npcs where id = ${first.npc.id}`)[0]!
      .id;
  const old = await avatar();
  const next = picture(128);
  expect((await upload(pngCard(next), `?update=${first.npc.id}`)).status).toBe(200);
  expect(await avatar()).not.toBe(old);
  const served = await app.api(`/api/npcs/${first.npc.id}/avatar`, { cookie });
  expect(new Uint8Array(await served.arrayBuffer())).toEqual(next);
  expect(await app.db.sql`select 1 from blobs where id = ${old}`).toHaveLength(0);
});

it('group chats: "Tomas, …" is for Brother Tomas; in "each" mode every NPC answers in turn', async () => {
  const make = async (name: string) =>
    ((await (await app.api('/api/npcs', { cookie, body: { name } })).json()) as { npc: Npc }).npc;
  const [ilse, tomas] = [await make('Sister Ilse'), await make('Brother Tomas')];
  const c = (await (
    await app.api('/api/conversations', { cookie, body: { npcIds: [ilse.id, tomas.id] } })
  ).json()) as { conversation: { id: string; replyMode: string } };
  expect(c.conversation.replyMode).toBe('one');
  await say(c.conversation.id, 'Tomas, what do the ledgers say?');
  let shown = await messages(app, cookie, c.conversation.id);
  expect(shown.map((m) => m.npcName)).toEqual([null, 'Brother Tomas']);
  const patched = await app.api(`/api/conversations/${c.conversation.id}`, {
    cookie,
    method: 'PATCH',
    body: { replyMode: 'each' },
  });
  expect(((await patched.json()) as { conversation: { replyMode: string } }).conversation.replyMode).toBe(
    'each',
  );
  const before = app.fake.requests.filter((r) => r.body.stream).length;
  await say(c.conversation.id, 'Both of you: is the crypt safe?');
  shown = await messages(app, cookie, c.conversation.id);
  // The first to join answers first (no one was addressed), then the other, who sees the first in its history.
  expect(shown.slice(2).map((m) => m.npcName)).toEqual([null, 'Sister Ilse', 'Brother Tomas']);
  const streamed = app.fake.requests.filter((r) => r.body.stream).slice(before);
  expect(streamed).toHaveLength(2);
  expect(JSON.stringify(streamed[1]!.body.messages)).toContain(
    '[Brother Tomas]: Hello from the fake Provider.',
  );
  // Bounded by the hop limit: at 0, only the first answers, and the turn says why it stopped.
  await app.db.sql`update village_settings set hop_limit = 0`;
  const hopped = app.fake.requests.filter((r) => r.body.stream).length;
  const frames = await collectFrames(
    await app.api(`/api/conversations/${c.conversation.id}/messages`, { cookie, body: { text: 'And now?' } }),
  );
  await app.db.sql`update village_settings set hop_limit = 6`;
  expect(frames.find((f) => f.type === 'error')).toMatchObject({ code: 'HOP_LIMIT' });
  expect(app.fake.requests.filter((r) => r.body.stream).length - hopped).toBe(1);
});
