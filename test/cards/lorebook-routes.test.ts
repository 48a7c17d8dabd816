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

it('a Player reads and replaces their NPC’s lorebook; another Player can neither read nor change it', async () => {
  const { cookie } = await app.signIn();
  const res = await fetch(`${app.url}/api/npcs/import`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body: JSON.stringify(card),
  });
  const { npc } = (await res.json()) as { npc: { id: string } };
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
