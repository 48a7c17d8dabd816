import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { allMessages } from '../../src/conversations/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

// The Conversation is a tree (issue 18): edits and forks start branches, Regenerate makes a sibling, the
// transcript shows one path, and the window, the summary and publishing follow it.
let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

type Branch = { index: number; count: number; previous: string | null; next: string | null };
type Row = { id: string; role: string; text: string; parentId: string | null; branch: Branch };
const transcript = async (id: string) =>
  ((await (await app.api(`/api/conversations/${id}?limit=200`, { cookie })).json()) as { messages: Row[] })
    .messages;
const texts = async (id: string) => (await transcript(id)).map((m) => m.text);
const say = async (id: string, text: string, reply: string, branchFrom?: { parentId: string | null }) => {
  app.fake.enqueue(textScript(reply));
  const res = await app.api(`/api/conversations/${id}/messages`, {
    cookie,
    body: { text, ...(branchFrom ? { branchFrom } : {}) },
  });
  expect(res.status).toBe(200);
  await collectFrames(res);
};
const regenerate = async (id: string, reply: string) => {
  app.fake.enqueue(textScript(reply));
  await collectFrames(await app.api(`/api/conversations/${id}/regenerate`, { cookie, body: {} }));
};
const show = (id: string, messageId: string) =>
  app.api(`/api/conversations/${id}/branch`, { cookie, body: { messageId } });
/** The texts of the Messages the Provider was sent in its last streaming request. */
const sentToProvider = () => {
  const last = app.fake.requests.filter((r) => (r.body as { stream?: boolean }).stream).at(-1)!;
  return JSON.stringify((last.body as { messages: unknown[] }).messages);
};

it('Regenerate makes a sibling; ‹ › switches between them; the choice survives a reload', async () => {
  const { conversationId: c } = await setupConversation(app, cookie);
  await say(c, 'Hello', 'Hi there.');
  await say(c, 'Tell a story', 'Once upon a time.');
  await regenerate(c, 'Long ago.');
  expect(await texts(c)).toEqual(['Hello', 'Hi there.', 'Tell a story', 'Long ago.']);
  const rows = await transcript(c);
  expect(rows[3]!.branch).toMatchObject({ index: 1, count: 2, next: null });
  const first = rows[3]!.branch.previous;
  const second = rows[3]!.id;
  expect(rows[0]!.branch).toEqual({ index: 0, count: 1, previous: null, next: null });
  expect((await show(c, first!)).status).toBe(204);
  expect(await texts(c)).toEqual(['Hello', 'Hi there.', 'Tell a story', 'Once upon a time.']);
  // The next turn goes on from the branch shown, and is sent the path, not the other branch.
  await say(c, 'And then?', 'They lived.');
  expect(await texts(c)).toEqual([
    'Hello',
    'Hi there.',
    'Tell a story',
    'Once upon a time.',
    'And then?',
    'They lived.',
  ]);
  expect(sentToProvider()).toContain('Once upon a time.');
  expect(sentToProvider()).not.toContain('Long ago.');
  // Switching to the other answer shows where that branch was left; switching back too.
  await show(c, second!);
  expect(await texts(c)).toEqual(['Hello', 'Hi there.', 'Tell a story', 'Long ago.']);
  await show(c, first!);
  expect((await texts(c)).at(-1)).toBe('They lived.');
  // Choosing the first Message returns to the branch last shown, not merely the newest.
  await show(c, rows[0]!.id);
  expect((await texts(c)).at(-1)).toBe('They lived.');
});

it('editing a Player Message or forking from a reply starts a branch; the old one stays reachable', async () => {
  const { conversationId: c } = await setupConversation(app, cookie);
  await say(c, 'Pick a colour', 'Blue.');
  await say(c, 'Why blue?', 'It is calm.');
  const [ask, blue, why] = await transcript(c);
  // Edit "Why blue?": the edit follows its parent.
  await say(c, 'Why not red?', 'Red is loud.', { parentId: why!.parentId });
  expect(await texts(c)).toEqual(['Pick a colour', 'Blue.', 'Why not red?', 'Red is loud.']);
  const edited = (await transcript(c))[2]!;
  expect(edited.branch).toEqual({ index: 1, count: 2, previous: why!.id, next: null });
  expect(sentToProvider()).not.toContain('Why blue?');
  // Fork from the first reply: the same place, a third sibling.
  await say(c, 'Green?', 'Green grows.', { parentId: blue!.id });
  expect((await transcript(c))[2]!.branch).toMatchObject({ index: 2, count: 3 });
  // Edit the very first Message: a new root.
  await say(c, 'Pick a number', 'Seven.', { parentId: null });
  expect(await texts(c)).toEqual(['Pick a number', 'Seven.']);
  expect((await transcript(c))[0]!.branch).toMatchObject({
    index: 1,
    count: 2,
    previous: ask!.id,
    next: null,
  });
  await show(c, why!.id);
  expect(await texts(c)).toEqual(['Pick a colour', 'Blue.', 'Why blue?', 'It is calm.']);
  // Publishing reads the path shown.
  expect((await allMessages(app.db.sql, c)).map((m) => m.text)).toEqual(await texts(c));
});

it('the rolling summary follows the path: one that covered another branch is not sent, and is rebuilt', async () => {
  const { conversationId: c } = await setupConversation(app, cookie);
  await say(c, 'One', 'Uno.');
  await say(c, 'Two', 'Dos.');
  const rows = await transcript(c);
  // As if the summary had caught up with the whole Conversation.
  const last = (await app.db.sql`select max(seq)::text as s from messages where conversation_id = ${c}`)[0]!
    .s;
  await app.db
    .sql`update conversations set summary = 'SUMMARY-OF-TWO', summary_through = ${last} where id = ${c}`;
  await say(c, 'Three', 'Tres.');
  expect(sentToProvider()).toContain('SUMMARY-OF-TWO');
  // Branch before "Two": the summary covered a Message no longer on the path.
  await say(c, 'Deux', 'Zwei.', { parentId: rows[1]!.id });
  expect(sentToProvider()).not.toContain('SUMMARY-OF-TWO');
  expect(sentToProvider()).not.toContain('Dos.');
  const [conv] = await app.db.sql`select summary from conversations where id = ${c}`;
  expect(conv!.summary).not.toContain('SUMMARY-OF-TWO');
});

it('refuses what cannot be: another Conversation’s Message, a switch during a reply; and old Conversations are one path', async () => {
  const { conversationId: c } = await setupConversation(app, cookie);
  const { conversationId: d } = await setupConversation(app, cookie);
  await say(d, 'Elsewhere', 'There.');
  const [elsewhere] = await transcript(d);
  expect((await show(c, elsewhere!.id)).status).toBe(404);
  const res = await app.api(`/api/conversations/${c}/messages`, {
    cookie,
    body: { text: 'x', branchFrom: { parentId: elsewhere!.id } },
  });
  expect(res.status).toBe(404);
  // A reply being written: the path cannot move under it.
  app.fake.enqueue(async (r) => {
    r.text('slow ');
    await r.wait(1500);
    r.finish();
  });
  const streaming = app.api(`/api/conversations/${d}/messages`, { cookie, body: { text: 'Wait' } });
  const reading = (await streaming).body!.getReader();
  await reading.read();
  const busy = await show(d, elsewhere!.id);
  expect(busy.status).toBe(409);
  while (!(await reading.read()).done);

  // The migration's own statement: Messages with no parents become one path, each after the one before.
  const { conversationId: legacy } = await setupConversation(app, cookie);
  await app.db.sql`insert into messages (conversation_id, role, text, parts, status)
    select ${legacy}, case when i % 2 = 1 then 'player' else 'npc' end, 'm' || i, '[]', 'complete' from generate_series(1, 5) i`;
  const migration = readFileSync(
    path.resolve(import.meta.dirname, '../../migrations/024_branches.sql'),
    'utf8',
  );
  const update = migration.slice(
    migration.indexOf('update messages'),
    migration.indexOf(';', migration.indexOf('update messages')),
  );
  await app.db.sql.unsafe(`${update} and m.conversation_id = '${legacy}'`);
  const rows = await transcript(legacy);
  expect(rows.map((m) => m.text)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5']);
  expect(rows.map((m) => m.parentId)).toEqual([null, ...rows.slice(0, 4).map((m) => m.id)]);
});

it('a page tells each Message its place among its siblings in a few fields, however many forks there are', async () => {
  const { conversationId: c } = await setupConversation(app, cookie);
  await say(c, 'Hello', 'Hi.');
  const [hello] = await transcript(c);
  // 3,000 edits of the first Message (as a Player could make them): each a new root.
  await app.db.sql`insert into messages (conversation_id, role, parts, text, on_path)
    select ${c}, 'player', '[]', 'edit ' || i, false from generate_series(1, 3000) i`;
  const before = await app.api(`/api/conversations/${c}?limit=200`, { cookie });
  const body = await before.text();
  // The list of 3,001 ids would be 110 KB on its own; the page holds two ids and two numbers per Message.
  expect(body.length).toBeLessThan(5_000);
  const rows = (JSON.parse(body) as { messages: Row[] }).messages;
  expect(rows[0]!.id).toBe(hello!.id);
  const [next] = await app.db
    .sql`select id from messages where conversation_id = ${c} and parent_id is null order by seq offset 1 limit 1`;
  expect(rows[0]!.branch).toEqual({ index: 0, count: 3001, previous: null, next: next!.id });
  expect(rows[1]!.branch).toEqual({ index: 0, count: 1, previous: null, next: null });
});

it('in a Party, Regenerate is answered by the NPC the Player’s Message addressed, as the first reply was', async () => {
  const { conversationId: c } = await setupConversation(app, cookie, [{ name: 'Ada' }, { name: 'Grace' }]);
  await say(c, '@Grace what do you make of it?', 'A puzzle.');
  await regenerate(c, 'A riddle.');
  const rows = (await (await app.api(`/api/conversations/${c}?limit=200`, { cookie })).json()) as {
    messages: { text: string; npcName: string | null }[];
  };
  expect(rows.messages.map((m) => [m.text, m.npcName])).toEqual([
    ['@Grace what do you make of it?', null],
    ['A riddle.', 'Grace'],
  ]);
});
