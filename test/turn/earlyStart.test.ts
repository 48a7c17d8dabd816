import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../src/log/index.ts';
import type { Frame } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { readFrames } from '../support/sse.ts';
import { messages, sendAndStop, setupConversation } from '../support/turns.ts';

// ADR 0099: a turn's start frame is sent once its claim statement has answered, while the COMMIT behind it is
// flushed; the reply's reads and the Provider call wait for the COMMIT. The faults are PostgreSQL's own, at
// COMMIT: a deferred constraint trigger on the Player's Message that sleeps ("slow:") or fails ("fail:").
let app: TestApp;
let cookie: string;
const logged: string[] = [];
beforeAll(async () => {
  app = await startTestApp(
    {},
    {},
    { logger: createLogger({ level: 'error', destination: { write: (line: string) => logged.push(line) } }) },
  );
  await app.db.sql`update village_settings set turns_per_minute = 10000`;
  await app.db.sql.unsafe(`
    create sequence commit_faults;
    create function at_commit() returns trigger language plpgsql as $$
    begin
      if new.text like 'slow:%' then perform nextval('commit_faults'); perform pg_sleep(0.5); end if;
      if new.text like 'kill:%' then perform nextval('commit_faults'); perform pg_sleep(3); end if;
      if new.text like 'fail:%' then
        perform nextval('commit_faults');
        raise exception 'injected failure at commit';
      end if;
      return null;
    end $$;
    create constraint trigger at_commit after insert on messages deferrable initially deferred
      for each row execute function at_commit();`);
  ({ cookie } = await app.signIn());
}, 60_000);
afterAll(() => app?.close());

const faults = async () => Number((await app.db.sql`select last_value from commit_faults`)[0]!.last_value);
const send = (conversationId: string, text: string) =>
  app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text } });
/** The Conversation is free after a turn that was not stored: the next Message is answered in full. */
async function nextMessageGoes(conversationId: string) {
  app.fake.enqueue((r: Reply) => {
    r.text('Now it works.');
    r.finish('stop', { prompt_tokens: 1, completion_tokens: 1 });
  });
  const next = await send(conversationId, 'again');
  expect(next.status).toBe(200);
  const after: Frame[] = [];
  for await (const frame of readFrames(next)) after.push(frame);
  expect(after.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
}

it('the start frame comes while the claim is still being stored; the Provider is asked after, with the Message', async () => {
  const { conversationId } = await setupConversation(app, cookie);
  app.fake.enqueue((r: Reply) => {
    r.text('Hello back.');
    r.finish('stop', { prompt_tokens: 3, completion_tokens: 2 });
  });
  const asked = app.fake.requests.length;
  const res = await send(conversationId, 'slow: hello there');
  expect(res.status).toBe(200);
  const frames: Frame[] = [];
  let visibleAtStart: number | undefined;
  for await (const frame of readFrames(res)) {
    frames.push(frame);
    if (frame.type === 'start')
      visibleAtStart = (await app.db.sql`select 1 from messages where id = ${frame.playerMessageId}`).length;
  }
  // The COMMIT was still sleeping when the start frame was read: nothing of the turn was visible yet.
  expect(visibleAtStart).toBe(0);
  expect(await faults()).toBeGreaterThanOrEqual(1);
  expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
  // The Provider was asked once the claim was stored: its history, read on another connection, held the Message.
  expect(app.fake.requests.length).toBe(asked + 1);
  expect(JSON.stringify(app.fake.requests.at(-1)!.body)).toContain('slow: hello there');
  const stored = await messages(app, cookie, conversationId);
  expect(stored.map((m) => [m.role, m.text, m.status])).toEqual([
    ['player', 'slow: hello there', 'complete'],
    ['npc', 'Hello back.', 'complete'],
  ]);
}, 60_000);

it('a claim whose COMMIT fails: the start frame, then an error; the Provider is never asked; the next Message goes', async () => {
  const { conversationId } = await setupConversation(app, cookie);
  const fired = await faults();
  const asked = app.fake.requests.length;
  const res = await send(conversationId, 'fail: this is never stored');
  expect(res.status).toBe(200);
  const frames: Frame[] = [];
  for await (const frame of readFrames(res)) frames.push(frame);
  expect(await faults()).toBe(fired + 1);
  expect(frames.map((f) => f.type)).toEqual(['start', 'error']);
  const start = frames[0]!;
  expect(frames[1]).toMatchObject({
    type: 'error',
    messageId: start.type === 'start' ? start.messageId : '',
    code: 'NOT_STORED',
    message: expect.stringMatching(/could not be saved.*Send it again/),
  });
  expect(app.fake.requests.length).toBe(asked);
  // Nothing of it was stored, and the Conversation is not left claimed.
  expect(await messages(app, cookie, conversationId)).toEqual([]);
  const [row] = await app.db.sql`select turn_owner from conversations where id = ${conversationId}`;
  expect(row!.turn_owner).toBeNull();
  await nextMessageGoes(conversationId);
  expect(logged.some((line) => line.includes('turn claim not stored'))).toBe(true);
}, 60_000);

it('Stop sent the moment the start frame arrives, before the claim is stored, stops the reply', async () => {
  const { conversationId } = await setupConversation(app, cookie);
  app.fake.enqueue(async (r: Reply) => {
    for (let i = 0; i < 100 && !r.clientGone; i++) {
      r.text(`word${i} `);
      await new Promise((res) => setTimeout(res, 20));
    }
    r.finish('stop', { prompt_tokens: 1, completion_tokens: 100 });
  });
  const fired = await faults();
  // sendAndStop presses Stop at once and expects 200 for it.
  const frames = await sendAndStop(app, cookie, conversationId, 'slow: stop me', (f) => f.length === 1);
  expect(await faults()).toBe(fired + 1);
  expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'stopped' });
  const stored = await messages(app, cookie, conversationId);
  expect(stored.map((m) => [m.role, m.status])).toEqual([
    ['player', 'complete'],
    ['npc', 'stopped'],
  ]);
}, 60_000);

it('a claim whose connection is lost mid-COMMIT: known not stored, said so; the server lives and goes on', async () => {
  const { conversationId } = await setupConversation(app, cookie);
  const fired = await faults();
  const asked = app.fake.requests.length;
  const res = await send(conversationId, 'kill: lost with its connection');
  expect(res.status).toBe(200);
  const frames: Frame[] = [];
  for await (const frame of readFrames(res)) {
    frames.push(frame);
    if (frame.type !== 'start') continue;
    // The claim's backend, sleeping in its COMMIT, is ended as a restart or a failover would end it.
    const [row] = await app.db.sql`select pid from pg_stat_activity
      where datname = current_database() and state = 'active' and query = 'commit' and wait_event = 'PgSleep'`;
    expect(row).toBeDefined();
    await app.db.sql`select pg_terminate_backend(${row!.pid})`;
  }
  expect(await faults()).toBe(fired + 1);
  expect(frames.map((f) => f.type)).toEqual(['start', 'error']);
  expect(frames[1]).toMatchObject({
    code: 'NOT_STORED',
    message: expect.stringMatching(/could not be saved/),
  });
  expect(app.fake.requests.length).toBe(asked);
  expect(await messages(app, cookie, conversationId)).toEqual([]);
  await nextMessageGoes(conversationId);
}, 60_000);
