import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';

// The lorebook editor's API: an NPC's books whole, a book replaced or deleted — only by its own Player, bounded.
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
}, 60_000);
afterAll(() => app?.close());

const card = {
  spec: 'chara_card_v2',
  spec_version: '2.0',
  data: {
    name: 'Maren',
    character_book: {
      name: 'Fenmoor',
      scan_depth: 4,
      entries: [{ keys: ['heron'], content: 'H', enabled: true, extensions: { custom: 1 } }],
    },
  },
};
type Books = { lorebooks: { id: string; book: Record<string, unknown>; problems: string[] }[] };

/** A Player signed in, with an NPC imported from `card` (its lorebook embedded). */
async function playerWithCard() {
  const { cookie } = await app.signIn();
  const res = await fetch(`${app.url}/api/npcs/import`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body: JSON.stringify(card),
  });
  const { npc } = (await res.json()) as { npc: { id: string } };
  return { cookie, npc };
}

it('a Player reads and replaces their NPC’s lorebook; another Player can neither read nor change it', async () => {
  const { cookie, npc } = await playerWithCard();
  const books = async (as = cookie) =>
    (await (await app.api(`/api/npcs/${npc.id}/lorebooks`, { cookie: as })).json()) as Books;
  const [own] = (await books()).lorebooks;
  expect(own).toMatchObject({
    name: 'Fenmoor',
    embedded: true,
    book: card.data.character_book,
    problems: [],
  });

  const edited = {
    ...own!.book,
    entries: [
      { keys: ['heron', '/(x)\\1/'], content: 'H2', enabled: true, extensions: { custom: 1 } },
      { keys: ['reed'], content: 'R', constant: true },
    ],
  };
  const put = (body: unknown, as = cookie) =>
    app.api(`/api/lorebooks/${own!.id}`, { cookie: as, method: 'PUT', body });
  const saved = await put({ book: edited });
  expect(saved.status).toBe(200);
  expect(((await saved.json()) as { problems: string[] }).problems).toEqual([
    expect.stringMatching(/^The key \/\(x\)\\1\/ is not a pattern this app runs safely/),
  ]);
  expect((await books()).lorebooks[0]!.book).toEqual(edited);
  // The card exports with the edited book, every field the editor did not touch as it came.
  const exported = (await (await app.api(`/api/npcs/${npc.id}/card`, { cookie })).json()) as {
    data: { character_book: unknown };
  };
  expect(exported.data.character_book).toEqual(edited);

  const { cookie: other } = await app.signIn();
  expect((await app.api(`/api/npcs/${npc.id}/lorebooks`, { cookie: other })).status).toBe(404);
  expect((await put({ book: { entries: [] } }, other)).status).toBe(404);
  expect((await app.api(`/api/lorebooks/${own!.id}`, { cookie: other, method: 'DELETE' })).status).toBe(404);
  expect((await books()).lorebooks[0]!.book).toEqual(edited);

  // Bounded as an import is: 501 entries are refused, and nothing changes.
  const many = { entries: Array.from({ length: 501 }, () => ({ keys: ['k'], content: 'c' })) };
  expect((await put({ book: many })).status).toBe(413);
  expect((await books()).lorebooks[0]!.book).toEqual(edited);

  expect((await app.api(`/api/lorebooks/${own!.id}`, { cookie, method: 'DELETE' })).status).toBe(204);
  expect((await books()).lorebooks).toEqual([]);
});

it('a book as large as an import accepts (1–2 MB) is saved from the editor as bytes, bounded while it is read', async () => {
  const { cookie } = await app.signIn();
  // 100 entries of 15,000 characters: 1.5 MB of JSON, past the 1 MB JSON body, within the 2 MB a book holds.
  const big = {
    name: 'Atlas',
    entries: Array.from({ length: 100 }, (_, i) => ({
      keys: [`place${i}`],
      content: `${i} ${'the marsh road runs east. '.repeat(600)}`,
      enabled: true,
      extensions: { custom: i },
    })),
  };
  const bytes = JSON.stringify(big);
  expect(bytes.length).toBeGreaterThan(1_400_000);
  const send = (path: string, body: string, method = 'POST', as = cookie) =>
    fetch(`${app.url}${path}`, {
      method,
      headers: { cookie: as, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
      body,
    });
  const imported = await send('/api/lorebooks/import', bytes);
  expect(imported.status).toBe(201);
  const { lorebook } = (await imported.json()) as { lorebook: { id: string } };
  const stored = async () =>
    (await app.db.sql`select book from lorebooks where id = ${lorebook.id}`)[0]!.book as typeof big;

  const edited = {
    ...big,
    entries: [...big.entries.slice(1), { keys: ['new'], content: 'N', enabled: true }],
  };
  // As a JSON body it is past the 1 MB limit, and the answer says how to send it.
  const asJson = await app.api(`/api/lorebooks/${lorebook.id}`, {
    cookie,
    method: 'PUT',
    body: { book: edited },
  });
  expect(asJson.status).toBe(413);
  expect(await asJson.text()).toMatch(/application\/octet-stream/);
  // As bytes it is saved whole.
  const saved = await send(`/api/lorebooks/${lorebook.id}`, JSON.stringify({ book: edited }), 'PUT');
  expect(saved.status).toBe(200);
  expect(await saved.json()).toEqual({ problems: [] });
  expect(await stored()).toEqual(edited);

  // Bounded as an import is: past 2 MB of book, a string past the JSON limit, nesting too deep, not JSON, another
  // Player's book — each refused, nothing changed.
  const over = { ...big, entries: [...big.entries, ...big.entries.slice(0, 40)] };
  const refusals: [string, number, string][] = [
    [JSON.stringify({ book: over }), 413, 'LOREBOOK_TOO_LARGE'],
    [
      JSON.stringify({ book: { entries: [{ keys: ['k'], content: 'x'.repeat(1_000_001) }] } }),
      413,
      'LOREBOOK_TOO_LARGE',
    ],
    [`{"book":${'['.repeat(100)}${']'.repeat(100)}}`, 400, 'INVALID_BODY'],
    ['{"book": {"entries": [', 400, 'INVALID_BODY'],
    [JSON.stringify({ book: edited, more: 1 }), 400, 'INVALID_BODY'],
  ];
  for (const [body, status, code] of refusals) {
    const res = await send(`/api/lorebooks/${lorebook.id}`, body, 'PUT');
    expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([
      status,
      code,
    ]);
  }
  const { cookie: other } = await app.signIn();
  expect(
    (await send(`/api/lorebooks/${lorebook.id}`, JSON.stringify({ book: big }), 'PUT', other)).status,
  ).toBe(404);
  expect(await stored()).toEqual(edited);
});

it('a JSON body nested past the limits is refused in words on every lorebook path, not answered 500', async () => {
  const { cookie, npc } = await playerWithCard();
  const books = (await (await app.api(`/api/npcs/${npc.id}/lorebooks`, { cookie })).json()) as Books;
  const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
  const json = (path: string, method: string, body: string) =>
    fetch(`${app.url}${path}`, {
      method,
      headers: { cookie, 'content-type': 'application/json', 'x-agentsville': '1' },
      body,
    });
  const answers = [
    await json(`/api/lorebooks/${books.lorebooks[0]!.id}`, 'PUT', `{"book":{"entries":[],"x":${deep}}}`),
    await json('/api/lorebooks/import', 'POST', `{"entries":[{"keys":["a"],"content":"x","extra":${deep}}]}`),
  ];
  for (const res of answers) {
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    expect(error.code).not.toBe('INTERNAL');
    expect(error.message).toMatch(/nest|deep/i);
  }
  // Nothing changed.
  expect((await (await app.api(`/api/npcs/${npc.id}/lorebooks`, { cookie })).json()) as Books).toEqual(books);
});

it('a book stored before regex keys were bounded is checked only as far as a book may hold them', async () => {
  const { cookie, npc } = await playerWithCard();
  const books = async () =>
    (await (await app.api(`/api/npcs/${npc.id}/lorebooks`, { cookie })).json()) as Books;
  const [own] = (await books()).lorebooks;
  // As an older server stored it: 250 refused patterns among its secondary keys (none of them bounded then).
  const entries = Array.from({ length: 5 }, (_, i) => ({
    keys: ['k'],
    content: 'x',
    secondary_keys: Array.from({ length: 50 }, (_, j) => `/(?<=a)b${i * 50 + j}/`),
  }));
  await app.db.sql`update lorebooks set book = ${app.db.sql.json({ entries })} where id = ${own!.id}`;
  const { problems } = (await books()).lorebooks[0]!;
  expect(problems).toHaveLength(201);
  expect(problems.slice(0, 200).every((p) => /never matches/.test(p))).toBe(true);
  expect(problems[200]).toMatch(/^50 \/regex\/ keys past the first 200 were not checked/);
});
