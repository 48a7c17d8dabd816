import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { snippetFor, snippetOf, toTsquery } from '../../src/conversations/search.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

// Search across a Player's Conversations (issue 18): PostgreSQL full text on the flat text, ranked, with
// snippets whose matched words are marked as data, never as HTML.
let app: TestApp;
let cookie: string;
let other: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
  ({ cookie: other } = await app.signIn());
});
afterAll(() => app?.close());

type Results = {
  results: {
    conversationId: string;
    messageId: string;
    role: string;
    snippet: { text: string; hit: boolean }[];
  }[];
};
const search = async (q: string, as = cookie) => {
  const res = await app.api(`/api/search?q=${encodeURIComponent(q)}`, { cookie: as });
  return { status: res.status, body: (await res.json()) as Results & { error?: { code: string } } };
};

it("finds a word in an old turn, ranked, marked, and only in the Player's own Conversations", async () => {
  const { conversationId } = await setupConversation(app, cookie);
  await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Where did the zeppelin land, and <b>who</b> flew it?' },
    }),
  );
  // Forty newer turns bury it (written directly: only their number matters here).
  await app.db.sql`insert into messages (conversation_id, role, text, parts, status)
    select ${conversationId}, 'player', 'turn ' || i || ' about nothing', '[]', 'complete' from generate_series(1, 40) i`;
  const second = await setupConversation(app, cookie);
  await app.db.sql`insert into messages (conversation_id, role, text, parts, status) values
    (${second.conversationId}, 'player', 'Zeppelin, zeppelin, zeppelin: the zeppelin again.', '[]', 'complete')`;
  // Another Player's Conversation holds the word too.
  const theirs = await setupConversation(app, other);
  await app.db.sql`insert into messages (conversation_id, role, text, parts, status) values
    (${theirs.conversationId}, 'player', 'my private zeppelin', '[]', 'complete')`;

  const { status, body } = await search('Zeppelin');
  expect(status).toBe(200);
  expect(body.results.map((r) => r.conversationId)).toEqual([second.conversationId, conversationId]);
  const old = body.results[1]!;
  expect(old.role).toBe('player');
  expect(old.snippet.filter((r) => r.hit).map((r) => r.text.toLowerCase())).toEqual(['zeppelin']);
  // The words around it come back as text: the markup the Player typed is not interpreted anywhere.
  expect(old.snippet.map((r) => r.text).join('')).toContain('<b>who</b>');
  // As typed: a prefix of the last word finds it; every word must be there.
  expect((await search('zepp')).body.results).toHaveLength(2);
  expect((await search('zeppelin flew')).body.results.map((r) => r.messageId)).toEqual([old.messageId]);
  expect((await search('zeppelin submarine')).body.results).toHaveLength(0);
  expect((await search('zeppelin', other)).body.results).toHaveLength(1);
});

it('any text is a valid search: tsquery syntax is only words, and an empty box is a clear error', async () => {
  expect((await search("a & | ! ( ) : * ' <-> \\")).status).toBe(200);
  const empty = await search('   ');
  expect(empty.status).toBe(400);
  expect(empty.body.error?.code).toBe('INVALID_QUERY');
  expect((await search('x'.repeat(201))).status).toBe(400);
  // Whatever the words, PostgreSQL accepts the query built from them.
  await fc.assert(
    fc.asyncProperty(fc.string({ maxLength: 60, unit: 'grapheme' }), async (q) => {
      const query = toTsquery(q);
      if (query) await app.db.sql`select to_tsquery('simple', ${query})`;
    }),
    { numRuns: 200 },
  );
});

it('a snippet is the text around the first match, whole words, every match marked', () => {
  const text = `${'lead '.repeat(40)}the Zeppelin landed; zeppelins fly${' tail'.repeat(60)}`;
  const runs = snippetOf(text, ['zeppelin']);
  expect(runs.filter((r) => r.hit).map((r) => r.text)).toEqual(['Zeppelin', 'zeppelins']);
  expect(runs[0]).toEqual({ text: '…', hit: false });
  expect(runs.at(-1)).toEqual({ text: '…', hit: false });
  expect(runs[1]!.text.startsWith('lead ')).toBe(true);
  // Only the last word is a prefix.
  expect(
    snippetOf('zeppelins and zeppelin', ['zeppelin', 'and'])
      .filter((r) => r.hit)
      .map((r) => r.text),
  ).toEqual(['and', 'zeppelin']);
  fc.assert(
    fc.property(
      fc.string({ maxLength: 400 }),
      fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }),
      (t, ws) => {
        const runs = snippetOf(t, ws.map((w) => w.toLowerCase()).filter(Boolean));
        // Runs are slices of the text in order (besides the ellipses).
        const joined = runs
          .filter((r) => !(r.text === '…' && !r.hit))
          .map((r) => r.text)
          .join('');
        expect(t.includes(joined)).toBe(true);
      },
    ),
  );
  // A result reads as the transcript does: Markdown marks are not shown.
  expect(
    snippetFor('Found **three** maps: the *old* one and `the copy`.', ['maps'])
      .map((r) => r.text)
      .join(''),
  ).toBe('Found three maps: the old one and the copy.');
});

it("a reply's words are found once it ends, not while it streams (its checkpoints make no search vector)", async () => {
  const { checkpointMessages, finishMessage } = await import('../../src/conversations/index.ts');
  const { conversationId } = await setupConversation(app, cookie);
  const [row] = await app.db.sql<{ id: string }[]>`
    insert into messages (conversation_id, role, text, parts, status)
    values (${conversationId}, 'npc', '', '[]', 'streaming') returning id`;
  const text = 'The quokka smiled at the quokka keeper.';
  const parts = [{ type: 'text' as const, text }];
  await checkpointMessages(app.db.sql, [{ id: row!.id, parts, text }]);
  const [streaming] = await app.db.sql`select tsv is null as none, text from messages where id = ${row!.id}`;
  // The checkpoint landed (its text is there); only the vector waits for the end.
  expect(streaming).toEqual({ none: true, text });
  expect((await search('quokka')).body.results).toHaveLength(0);
  await finishMessage(app.db.sql, row!.id, {
    parts,
    status: 'stopped',
    error: null,
    usage: null,
    costUsd: null,
  });
  expect((await search('quokka')).body.results.map((r) => r.messageId)).toEqual([row!.id]);
});
