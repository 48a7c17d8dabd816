import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type Reply, textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

// A turn's claim is released in the statement that ends its last reply when nothing follows that reply (no
// hand-over, no next NPC in turn, no title call): one commit fewer per turn, and never a moment where the last
// reply has ended and the Conversation is still held. A reply that something follows keeps the claim.
// A trigger of the test's own records who held the Conversation as each reply's row left `streaming`: an AFTER
// trigger runs at the end of the statement, so it sees a release made in that same statement.
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({}, { SUMMARISED_TITLES: 'true' });
  await app.db.sql.unsafe(`
    create table seen_at_end (message_id uuid, status text, owner int);
    create function record_end() returns trigger language plpgsql as $$ begin
      insert into seen_at_end select new.id, new.status, c.turn_owner from conversations c
      where c.id = new.conversation_id;
      return null;
    end $$;
    create trigger record_end after update of status on messages for each row
      when (old.status = 'streaming' and new.status <> 'streaming') execute function record_end();`);
}, 60_000);
afterAll(() => app?.close());
beforeEach(async () => {
  app.fake.clear();
  app.fake.summaryText = 'Tides';
  await app.db.sql`update village_settings set turns_per_minute = 1000, hop_limit = 5`;
});

const send = async (cookie: string, conversationId: string, text: string) =>
  collectFrames(await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text } }));
/** For each reply of the frames, in order: its status and whether the Conversation was held as it ended. */
const heldAtEnd = async (frames: { type: string; messageId?: string | null }[]) => {
  const ids = frames.filter((f) => f.type === 'start').map((f) => f.messageId!);
  const rows = await app.db.sql<{ id: string; status: string; held: boolean }[]>`
    select message_id::text as id, status, owner is not null as held from seen_at_end where message_id in ${app.db.sql(ids)}`;
  return ids.map((id) => {
    const row = rows.find((r) => r.id === id);
    return row && { status: row.status, held: row.held };
  });
};
const free = async (conversationId: string) =>
  (await app.db.sql`select turn_owner from conversations where id = ${conversationId}`)[0]!.turn_owner ===
  null;
const handOver = (npc: string) => (r: Reply) => {
  r.toolCallStart(0, `call_${npc}`, 'message_npc', JSON.stringify({ npc, message: 'You next.' }));
  r.finish('tool_calls');
};

it('the title call keeps the claim past the first reply; a later reply that ends the turn releases it as it ends', async () => {
  const { cookie } = await app.signIn();
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }]);
  app.fake.enqueue(textScript('At six.'));
  const first = await send(cookie, conversationId, 'When is high tide?');
  expect(await heldAtEnd(first)).toEqual([{ status: 'complete', held: true }]);
  expect(await free(conversationId)).toBe(true);

  app.fake.enqueue(textScript('Twice a day.'));
  const second = await send(cookie, conversationId, 'And low tide?');
  expect(await heldAtEnd(second)).toEqual([{ status: 'complete', held: false }]);
  expect(second.at(-1)?.type).toBe('finish');
  expect(await free(conversationId)).toBe(true);
});

it('a hand-over keeps the claim; the reply it hands over to ends the turn and releases it', async () => {
  const { cookie } = await app.signIn();
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }, { name: 'Bo' }]);
  app.fake.enqueue(textScript('Hello.'));
  await send(cookie, conversationId, '@Ada hi');
  app.fake.enqueue(handOver('Bo'), textScript('Bo here.'));
  const frames = await send(cookie, conversationId, '@Ada ask Bo');
  expect(await heldAtEnd(frames)).toEqual([
    { status: 'complete', held: true },
    { status: 'complete', held: false },
  ]);
  expect(await free(conversationId)).toBe(true);
});

it('in "each" mode the claim is kept past every NPC but the last to answer', async () => {
  const { cookie } = await app.signIn();
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }, { name: 'Bo' }]);
  app.fake.enqueue(textScript('Hello.'));
  await send(cookie, conversationId, '@Ada hi');
  const patched = await app.api(`/api/conversations/${conversationId}`, {
    cookie,
    method: 'PATCH',
    body: { replyMode: 'each' },
  });
  expect(patched.status).toBe(200);
  app.fake.enqueue(textScript('Ada here.'), textScript('Bo here.'));
  const frames = await send(cookie, conversationId, 'Both of you?');
  expect(await heldAtEnd(frames)).toEqual([
    { status: 'complete', held: true },
    { status: 'complete', held: false },
  ]);
  expect(await free(conversationId)).toBe(true);
});

it('a reply that fails ends the turn and releases the claim as it is stored', async () => {
  const { cookie } = await app.signIn();
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }]);
  app.fake.enqueue(textScript('Hello.'));
  await send(cookie, conversationId, 'hi');
  app.fake.enqueue((r) => {
    r.text('Half a ');
    r.streamError('upstream went away');
  });
  const frames = await send(cookie, conversationId, 'go on');
  expect(await heldAtEnd(frames)).toEqual([{ status: 'failed', held: false }]);
  expect(await free(conversationId)).toBe(true);
  // The next Message is taken at once.
  app.fake.enqueue(textScript('Back.'));
  expect((await send(cookie, conversationId, 'again')).at(-1)?.type).toBe('finish');
});
