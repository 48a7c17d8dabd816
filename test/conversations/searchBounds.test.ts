import { afterAll, beforeAll, expect, it } from 'vitest';
import { explainSearch, MAX_WORDS, toTsquery } from '../../src/conversations/search.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { setupConversation } from '../support/turns.ts';

// Search stays bounded whatever is typed and whoever else has a long history (issue 25, ADR 0057): a Player with
// few Messages is searched through their own, never through another Player's 25,000 that hold the same words.
let app: TestApp;
let mallory: { cookie: string; playerId: string };
let victim: { cookie: string; playerId: string };
const COMMON = ['the', 'this', 'that', 'there', 'then', 'they', 'them', 'thing', 'think', 'through'];

beforeAll(async () => {
  app = await startTestApp();
  [mallory, victim] = await Promise.all([app.signIn(), app.signIn()]);
  const { conversationId: theirs } = await setupConversation(app, mallory.cookie);
  await app.db.sql`insert into messages (conversation_id, role, text, parts, status)
    select ${theirs}, 'player',
      (select string_agg((${COMMON}::text[])[1 + (g + k) % 10] || ' w' || ((g * k) % 997), ' ')
        from generate_series(1, 20) k),
      '[]', 'complete'
    from generate_series(1, 25000) g`;
  const { conversationId: mine } = await setupConversation(app, victim.cookie);
  await app.db.sql`insert into messages (conversation_id, role, text, parts, status) values
    (${mine}, 'player', 'the thing they think through then', '[]', 'complete'),
    (${mine}, 'player', 'th is how my cousin writes the', '[]', 'complete')`;
  await app.db.sql`analyze messages`;
}, 120_000);
afterAll(() => app?.close());

const search = async (q: string, as: { cookie: string }) => {
  const res = await app.api(`/api/search?q=${encodeURIComponent(q)}`, { cookie: as.cookie });
  return { status: res.status, body: (await res.json()) as { results: { messageId: string }[] } };
};

it('a short prefix is matched whole, and only the first words of a long query count', () => {
  expect(toTsquery('th')).toBe('th');
  expect(toTsquery('thi')).toBe('thi:*');
  expect(toTsquery('zé')).toBe('zé');
  const twelve = toTsquery(COMMON.concat('w1', 'w2').join(' '))!;
  expect(twelve.split(' & ')).toHaveLength(MAX_WORDS);
});

it("a Player with few Messages is searched through their own, not the word index of everyone's", async () => {
  for (const q of ['th', 'the', COMMON.join(' '), 'w1']) {
    const plan = await explainSearch(app.db.sql, victim.playerId, q);
    expect(plan).toContain('messages_conversation');
    expect(plan).not.toContain('messages_search');
    expect(plan).not.toMatch(/Seq Scan on messages/);
  }
  // A Player with many goes through the word index (or stops at the first matches): either way bounded.
  const theirs = await explainSearch(app.db.sql, mallory.playerId, 'w5 w7');
  expect(theirs).toContain('messages_search');
});

it('a twelve-word query and a two-letter prefix answer, for the Player with many Messages and the one with few', async () => {
  const twelve = `${COMMON.join(' ')} the thi`;
  for (const q of [twelve, 'th', 't', 'the thin']) {
    const few = await search(q, victim);
    expect(few.status).toBe(200);
    const many = await search(q, mallory);
    expect(many.status).toBe(200);
  }
  expect((await search('th', victim)).body.results).toHaveLength(1);
  expect((await search('thi', victim)).body.results).toHaveLength(1);
  expect((await search(COMMON.slice(0, 8).join(' '), mallory)).body.results.length).toBeGreaterThan(0);
}, 60_000);
