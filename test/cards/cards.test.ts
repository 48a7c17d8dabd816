import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pngTextChunks, pngWithText } from '../../src/cards/png.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

// Character cards over HTTP (issue 18): a real V2 PNG card made here imports as an NPC with its lorebook as
// Memory; an NPC exports as a V2 card that imports back the same; hostile files get clear errors.
let app: TestApp;
let cookie: string;
let playerId: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie, playerId } = await app.signIn());
});
afterAll(() => app?.close());

const upload = (body: Uint8Array | string, type: string, as = cookie) =>
  fetch(`${app.running.listenUrl}/api/npcs/import`, {
    method: 'POST',
    headers: { cookie: as, 'content-type': type, 'x-agentsville': '1' },
    body,
  });
type Imported = {
  npc: { id: string; name: string; jobTitle: string; description: string; prompt: string };
  lorebookEntries: number;
  notes: string[];
  error?: { code: string; message: string };
};
const v2 = (data: Record<string, unknown>) => ({ spec: 'chara_card_v2', spec_version: '2.0', data });
const png = (card: unknown, key = 'chara') =>
  pngWithText({ [key]: Buffer.from(JSON.stringify(card)).toString('base64') });

it('a V2 PNG card imports as an NPC, its lorebook as Memory the NPC may use', async () => {
  const res = await upload(
    png(
      v2({
        name: 'Seraphina',
        description: '{{char}} guards the forest.',
        personality: 'gentle',
        scenario: '{{user}} wakes in a glade.',
        first_mes: 'Hello, traveller.',
        mes_example: '<START>\n{{user}}: hi\n{{char}}: hello',
        system_prompt: 'Stay in character.',
        character_book: {
          entries: [
            { keys: ['glade'], content: 'The glade is warded by old magic.', enabled: true },
            { keys: ['river'], content: 'The river runs north.', enabled: true },
            { keys: ['x'], content: 'disabled', enabled: false },
          ],
        },
      }),
    ),
    'image/png',
  );
  expect(res.status).toBe(201);
  const body = (await res.json()) as Imported;
  expect(body.npc).toMatchObject({ name: 'Seraphina', description: 'Seraphina guards the forest.' });
  expect(body.npc.prompt).toContain('Scenario: the Player wakes in a glade.');
  expect(body.lorebookEntries).toBe(2);
  const memories = await app.db.sql<{ text: string }[]>`select text from memories
    where player_id = ${playerId} and lorebook_of = ${body.npc.id} order by created_at, id`;
  expect(memories.map((m) => m.text)).toEqual([
    '(glade) The glade is warded by old magic.',
    '(river) The river runs north.',
  ]);
  const grants = await app.db.sql`select kind from grants where npc_id = ${body.npc.id}`;
  expect(grants.map((g) => g.kind)).toEqual(['memory']);
  // The Player sees them in Memory like any other.
  const listed = (await (await app.api('/api/memories', { cookie })).json()) as {
    memories: { text: string }[];
  };
  expect(listed.memories.map((m) => m.text)).toContain('(river) The river runs north.');
});

it('a V3 PNG with both chunks reads its ccv3 chunk; a V1 card is taken as JSON too', async () => {
  const both = pngWithText({
    chara: Buffer.from(JSON.stringify(v2({ name: 'Old' }))).toString('base64'),
    ccv3: Buffer.from(
      JSON.stringify({ spec: 'chara_card_v3', spec_version: '3.0', data: { name: 'New' } }),
    ).toString('base64'),
  });
  expect(((await (await upload(both, 'image/png')).json()) as Imported).npc.name).toBe('New');
  const v1 = await app.api('/api/npcs/import', {
    cookie,
    body: { name: 'Plain', description: 'A V1 card.' },
  });
  expect(v1.status).toBe(201);
  expect(((await v1.json()) as Imported).npc.description).toBe('A V1 card.');
});

it('an NPC exports as a V2 card (JSON and PNG) that imports back the same, lorebook included', async () => {
  const made = (await (
    await upload(
      png(
        v2({
          name: 'Quill',
          description: 'A scribe.',
          system_prompt: 'Write neatly.',
          character_book: { entries: [{ keys: [], content: 'Ink is scarce.' }] },
        }),
      ),
      'image/png',
    )
  ).json()) as Imported;
  await app.api(`/api/npcs/${made.npc.id}`, { cookie, method: 'PATCH', body: { jobTitle: 'Archivist' } });
  const asJson = await app.api(`/api/npcs/${made.npc.id}/card`, { cookie });
  expect(asJson.headers.get('content-disposition')).toMatch(/^attachment; filename="?Quill\.json"?$/);
  const card = (await asJson.json()) as {
    spec: string;
    data: { name: string; system_prompt: string; character_book: { entries: { content: string }[] } };
  };
  expect(card.spec).toBe('chara_card_v2');
  expect(card.data.character_book.entries.map((e) => e.content)).toEqual(['Ink is scarce.']);
  const asPng = new Uint8Array(
    await (await app.api(`/api/npcs/${made.npc.id}/card?format=png`, { cookie })).arrayBuffer(),
  );
  expect(JSON.parse(Buffer.from(pngTextChunks(asPng).get('chara')!, 'base64').toString())).toEqual(card);
  for (const again of [
    await upload(JSON.stringify(card), 'application/octet-stream'),
    await upload(asPng, 'image/png'),
  ]) {
    const back = (await again.json()) as Imported;
    expect(back.npc).toMatchObject({
      name: 'Quill',
      jobTitle: 'Archivist',
      description: 'A scribe.',
      prompt: 'Write neatly.',
    });
    const lore = await app.db.sql`select text from memories where lorebook_of = ${back.npc.id}`;
    expect(lore.map((m) => m.text)).toEqual(['Ink is scarce.']);
  }
  // Another Player cannot read it.
  const { cookie: other } = await app.signIn();
  expect((await app.api(`/api/npcs/${made.npc.id}/card`, { cookie: other })).status).toBe(404);
});

it('hostile and broken files get a clear error, store nothing, and the server stays up', async () => {
  const before = (await app.db.sql`select count(*)::int as n from npcs where player_id = ${playerId}`)[0]!.n;
  const refused = async (body: Uint8Array | string, type: string, status: number, code: string) => {
    const res = await upload(body, type);
    expect(res.status).toBe(status);
    const { error } = (await res.json()) as Imported;
    expect(error?.code).toBe(code);
    expect(error?.message.length).toBeGreaterThan(10);
  };
  await refused(new Uint8Array([1, 2, 3]), 'application/octet-stream', 400, 'CARD_UNREADABLE');
  await refused(pngWithText({ Comment: 'just a picture' }), 'image/png', 400, 'NOT_A_CARD');
  await refused(png(v2({ name: 'Cut' })).slice(0, 60), 'image/png', 400, 'CARD_UNREADABLE');
  await refused(
    JSON.stringify(v2({ description: 'no name' })),
    'application/octet-stream',
    400,
    'NOT_A_CARD',
  );
  await refused(
    JSON.stringify(v2({ name: 'Long', system_prompt: 'x'.repeat(20_001) })),
    'application/octet-stream',
    422,
    'CARD_TOO_LONG',
  );
  await refused(new Uint8Array(10 * 1024 * 1024 + 1), 'application/octet-stream', 413, 'BODY_TOO_LARGE');
  await refused('', 'application/octet-stream', 400, 'CARD_EMPTY');
  // A 0-byte PNG (a download that failed) is told so, with what to do: not how to call the API.
  const empty = await upload(new Uint8Array(0), 'image/png');
  expect(empty.status).toBe(400);
  expect(((await empty.json()) as Imported).error?.message).toMatch(
    /^That file is empty \(0 bytes\).*import the new file/,
  );
  // Generated junk through the real route: never a 500.
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), fc.boolean(), async (bytes, asPng) => {
      const body = asPng ? new Uint8Array([...png(v2({ name: 'X' })).slice(0, 40), ...bytes]) : bytes;
      const res = await upload(body, 'application/octet-stream');
      expect([201, 400, 422]).toContain(res.status);
    }),
    { numRuns: 12 },
  );
  const after = (await app.db.sql`select count(*)::int as n from npcs where player_id = ${playerId}`)[0]!.n;
  expect(after - before).toBeLessThanOrEqual(12);
  expect((await app.api('/api/npcs', { cookie })).status).toBe(200);
  // Imports are work: past 30 a minute, a Player is told to wait.
  let limited: Response | undefined;
  for (let i = 0; i < 30 && !limited; i++) {
    const res = await upload('{}', 'application/octet-stream');
    if (res.status === 429) limited = res;
  }
  expect(((await limited!.json()) as Imported).error?.code).toBe('RATE_LIMITED');
});
