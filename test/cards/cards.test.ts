import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pngWithText } from '../../src/cards/png.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

// Character cards over HTTP (issue 18): V1/V2/V3 cards import; hostile files get clear errors.
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

// (Issue 29) the card's fields, greeting, lorebook and export: test/cards/characters.test.ts.
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
    JSON.stringify(v2({ name: 'Long', system_prompt: 'x'.repeat(50_001) })),
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
      expect([201, 400, 409, 422]).toContain(res.status);
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
