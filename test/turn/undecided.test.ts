import { afterAll, beforeAll, expect, it } from 'vitest';
import { endUndecided } from '../../src/conversations/index.ts';
import { connect, LIVE_INSTANCES } from '../../src/db/index.ts';
import { createLogger } from '../../src/log/index.ts';
import type { Frame } from '../../src/parts/index.ts';
import { settleUndecided } from '../../src/turn/undecided.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { startPgProxy } from '../support/pgProxy.ts';
import { readFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

// ADR 0101, 0102: a claim whose COMMIT the database made but whose answer was lost, with the database then out
// of reach when the turn looks it up. The server's pool goes through a TCP proxy that drops that answer and every
// other connection, as a restart does, and refuses new ones until the test lets them through. A deferred trigger
// holds the COMMIT a moment ("undecided:"), so the claim statement's answer (and the start frame) come before it.
let db: TestDatabase;
let proxy: Awaited<ReturnType<typeof startPgProxy>>;
let app: TestApp;
let cookie: string;
const logged: string[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await startPgProxy(db.url);
  app = await startTestApp(
    // A COMMIT unanswered this long is looked up (15 s in production).
    { commitWaitMs: 2_000 },
    {},
    {
      db: { ...db, url: proxy.url },
      logger: createLogger({ level: 'info', destination: { write: (line: string) => logged.push(line) } }),
    },
  );
  await db.sql`update village_settings set turns_per_minute = 10000`;
  await db.sql.unsafe(`
    create function at_commit() returns trigger language plpgsql as $$
    begin
      if new.text like 'undecided:%' then perform pg_sleep(0.3); end if;
      -- Past the turn's wait for its COMMIT (2 s) and both of its look-ups (5 s each, at the claim's lock).
      if new.text like 'slowcommit:%' then perform pg_sleep(14); end if;
      return null;
    end $$;
    create constraint trigger at_commit after insert on messages deferrable initially deferred
      for each row execute function at_commit();`);
  ({ cookie } = await app.signIn());
}, 60_000);
afterAll(async () => {
  await app?.close();
  await proxy?.close();
  await db?.drop();
});

const send = (conversationId: string, text: string) =>
  app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text } });

const live = async (instanceId: unknown) =>
  (await db.sql`select 1 from (${db.sql.unsafe(LIVE_INSTANCES)}) l(id) where id = ${instanceId as number}`)
    .length > 0;

it('a claim stored while its answer was lost and the database was out of reach: the Player is told it may not be saved, and once the database answers, its reply is ended and the Conversation freed', async () => {
  const { conversationId } = await setupConversation(app, cookie);
  const asked = app.fake.requests.length;
  const text = `undecided: ${Date.now().toString(36)}`;
  proxy.cutCommitAfter(text);
  const res = await send(conversationId, text);
  expect(res.status).toBe(200);
  const frames: Frame[] = [];
  for await (const frame of readFrames(res)) frames.push(frame);
  // The fault fired: the COMMIT's answer was dropped, and the turn's look-ups found the database out of reach.
  expect(proxy.state.cuts).toBe(1);
  expect(proxy.state.refused).toBeGreaterThanOrEqual(1);
  expect(frames.map((f) => f.type)).toEqual(['start', 'error']);
  expect(frames[1]).toMatchObject({
    code: 'NOT_STORED',
    message: expect.stringMatching(/may not have been saved/),
  });
  expect(app.fake.requests.length).toBe(asked);
  // It was stored: the Player's Message is there, its reply streaming, the Conversation claimed by this server.
  const [claimed] = await db.sql`select turn_owner from conversations where id = ${conversationId}`;
  const owner = claimed!.turn_owner;
  expect(owner).not.toBeNull();
  // The database is back.
  proxy.accept();
  // The server holds its instance lock again (ADR 0102): the claim is a live server's, which nothing else frees.
  await expect.poll(() => live(owner), { timeout: 15_000, interval: 200 }).toBe(true);
  // Asked again in the background: the reply ends and the claim is released.
  await expect
    .poll(
      async () =>
        (await db.sql`select turn_owner from conversations where id = ${conversationId}`)[0]!.turn_owner,
      { timeout: 20_000, interval: 200 },
    )
    .toBeNull();
  // The server answers again within seconds of the database's return, not after postgres.js's own backoff (20 s
  // a slot, which kept it unanswering for 30–60 s here): reconnectBackoff.
  await expect
    .poll(async () => (await app.api(`/api/conversations/${conversationId}?limit=1`, { cookie })).status, {
      timeout: 15_000,
      interval: 500,
    })
    .toBe(200);
  const stored = await messages(app, cookie, conversationId);
  expect(stored.map((m) => [m.role, m.text, m.status])).toEqual([
    ['player', text, 'complete'],
    ['npc', '', 'interrupted'],
  ]);
  expect(stored[1]!.error).toMatch(/database could not be reached/);
  expect(logged.some((line) => line.includes('undecided turn claim had been stored'))).toBe(true);
  // The next Message is answered in full.
  app.fake.enqueue((r: Reply) => {
    r.text('Now it works.');
    r.finish('stop', { prompt_tokens: 1, completion_tokens: 1 });
  });
  const next: Frame[] = [];
  for await (const frame of readFrames(await send(conversationId, 'again'))) next.push(frame);
  expect(next.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
}, 90_000);

it('never frees a claim that is not the undecided turn’s: none stored, or a later turn has claimed since', async () => {
  const { conversationId } = await setupConversation(app, cookie);
  // Another turn of the same instance holds the Conversation; the undecided turn's reply was never stored.
  await db.sql`update conversations set turn_owner = 4242 where id = ${conversationId}`;
  const gone = '00000000-0000-4000-8000-000000000000';
  const told: string[] = [];
  const settle = (messageId: string) =>
    settleUndecided(
      { sql: db.sql, instanceId: 4242, log: () => {} },
      { conversationId, messageId },
      async (id) => {
        told.push(id);
      },
      [0],
    );
  expect(await settle(gone)).toBe('nothing');
  expect(told).toEqual([]);
  // The undecided turn's reply was stored, and a sweep marked it interrupted first: the claim is still its own.
  const rows = await db.sql<{ id: string }[]>`
    with p as (insert into messages (conversation_id, role, text, parts, status)
      values (${conversationId}, 'player', 'first', '[]', 'complete') returning id)
    insert into messages (conversation_id, role, text, parts, status)
      select ${conversationId}, 'npc', '', '[]', 'interrupted' from p returning id`;
  const undecided = rows[0]!.id;
  expect(await settle(undecided)).toBe('released');
  expect(
    (await db.sql`select turn_owner from conversations where id = ${conversationId}`)[0]!.turn_owner,
  ).toBeNull();
  expect(told).toEqual([conversationId]);
  // A later claim, under the same instance id, dated the Conversation after the reply, its Messages not yet seen:
  // it is not freed.
  await db.sql`update conversations set turn_owner = 4242, updated_at = now() + interval '1 second'
    where id = ${conversationId}`;
  expect(await settle(undecided)).toBe('ended');
  expect(
    (await db.sql`select turn_owner from conversations where id = ${conversationId}`)[0]!.turn_owner,
  ).toBe(4242);
  await db.sql`update conversations set updated_at = now() - interval '1 hour' where id = ${conversationId}`;
  // A later turn (a regenerate, or a claim taken while this instance was taken for dead) has written since, under
  // the same instance id, and holds the claim: it is not freed.
  await db.sql`update conversations set turn_owner = 4242 where id = ${conversationId}`;
  await db.sql`update messages set status = 'streaming' where id = ${undecided}`;
  await db.sql`insert into messages (conversation_id, role, text, parts, status)
    values (${conversationId}, 'player', 'second', '[]', 'complete')`;
  expect(await settle(undecided)).toBe('ended');
  expect(
    (await db.sql`select turn_owner from conversations where id = ${conversationId}`)[0]!.turn_owner,
  ).toBe(4242);
  const [reply] = await db.sql`select status from messages where id = ${undecided}`;
  expect(reply!.status).toBe('interrupted');
  expect(await endUndecided(db.sql, { conversationId, messageId: gone, instanceId: 4242 })).toEqual({
    stored: false,
    ended: false,
    released: false,
  });
});

it('gives up after its last wait while the database never answers, and stops at once when its pool has ended', async () => {
  const lines: string[] = [];
  const turn = {
    conversationId: '00000000-0000-4000-8000-000000000001',
    messageId: '00000000-0000-4000-8000-000000000002',
  };
  // Nothing listens on port 1: every ask is refused.
  const unreachable = connect('postgres://postgres@127.0.0.1:1/none', { max: 1 });
  try {
    const log = (m: string) => lines.push(m);
    expect(
      await settleUndecided({ sql: unreachable, instanceId: 1, log }, turn, async () => {}, [0, 0, 0]),
    ).toBe('gave up');
    expect(lines).toEqual(['an undecided turn claim could not be settled']);
  } finally {
    await unreachable.end();
  }
  const ended = connect(db.url, { max: 1 });
  await ended.end();
  let asked = 0;
  const started = Date.now();
  const settled = await settleUndecided(
    { sql: ended, instanceId: 1, log: () => asked++ },
    turn,
    async () => {},
    [0, 60_000],
  );
  expect(settled).toBe('gave up');
  expect(asked).toBe(1);
  // It did not wait the second minute.
  expect(Date.now() - started).toBeLessThan(30_000);
});

it('a COMMIT never answered (the database hangs) does not hold the stream open: the claim is looked up, and a stored one goes on', async () => {
  const { conversationId } = await setupConversation(app, cookie);
  app.fake.enqueue((r: Reply) => {
    r.text('Answered all the same.');
    r.finish('stop', { prompt_tokens: 1, completion_tokens: 1 });
  });
  const text = `undecided: hangs ${Date.now().toString(36)}`;
  proxy.holdCommitAfter(text);
  const frames: Frame[] = [];
  for await (const frame of readFrames(await send(conversationId, text))) frames.push(frame);
  // The fault fired: the COMMIT was made, and its answer never came on a connection that stayed open.
  expect(proxy.state.holds).toBe(1);
  expect(frames[0]!.type).toBe('start');
  expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
  expect(logged.some((line) => line.includes('stored, though its COMMIT went unanswered'))).toBe(true);
  const stored = await messages(app, cookie, conversationId);
  expect(stored.map((m) => [m.role, m.status])).toEqual([
    ['player', 'complete'],
    ['npc', 'complete'],
  ]);
}, 60_000);

it('a COMMIT still being made when the turn has looked it up twice: the Player is told it may not be saved; once it is made, the reply is ended and the Conversation freed', async () => {
  const { conversationId } = await setupConversation(app, cookie);
  const asked = app.fake.requests.length;
  const text = `slowcommit: ${Date.now().toString(36)}`;
  const frames: Frame[] = [];
  for await (const frame of readFrames(await send(conversationId, text))) frames.push(frame);
  expect(frames.map((f) => f.type)).toEqual(['start', 'error']);
  expect(frames[1]).toMatchObject({
    code: 'NOT_STORED',
    message: expect.stringMatching(/may not have been saved/),
  });
  expect(app.fake.requests.length).toBe(asked);
  // The COMMIT lands a moment later: the undecided claim is settled, not taken for one never stored.
  await expect
    .poll(
      async () =>
        (
          await db.sql`select status from messages where conversation_id = ${conversationId} and role = 'npc'`
        ).map((m) => m.status),
      { timeout: 30_000, interval: 200 },
    )
    .toEqual(['interrupted']);
  const [claim] = await db.sql`select turn_owner from conversations where id = ${conversationId}`;
  expect(claim!.turn_owner).toBeNull();
  const stored = await messages(app, cookie, conversationId);
  expect(stored.map((m) => [m.role, m.text, m.status])).toEqual([
    ['player', text, 'complete'],
    ['npc', '', 'interrupted'],
  ]);
}, 90_000);
