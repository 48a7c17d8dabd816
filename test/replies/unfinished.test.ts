import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Frame } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { readFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

// A reply whose final write fails (a real failure in PostgreSQL, a trigger) on a server that keeps running: it is
// not left "streaming" for ever, and whoever follows it is told how it ended.
let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
  await app.db.sql.unsafe(`
    create sequence finish_failed;
    create function fail_finish() returns trigger language plpgsql as $$
    begin
      if old.status = 'streaming' and new.status in ('complete', 'stopped', 'failed') then
        perform nextval('finish_failed');
        raise exception 'injected failure of the final write';
      end if;
      -- The checkpoints fail too once half the reply is in: the last one that lands lacks the rest.
      if old.status = 'streaming' and new.status = 'streaming' and new.text like '%u20 %' then
        raise exception 'injected failure of a checkpoint';
      end if;
      return new;
    end $$;
    create trigger fail_finish before update on messages for each row execute function fail_finish();`);
});
afterAll(async () => {
  await app?.close();
});

it('is marked interrupted with all that arrived, and a follower gets that end instead of waiting for ever', async () => {
  const { conversationId } = await setupConversation(app, cookie);
  app.fake.enqueue(async (r) => {
    for (let i = 0; i < 40; i++) {
      r.text(`u${i} `);
      await r.wait(15);
    }
    r.finish();
  });
  const res = await app.api(`/api/conversations/${conversationId}/messages`, {
    cookie,
    body: { text: 'Go' },
  });
  const origin: Frame[] = [];
  const frames = readFrames(res);
  for await (const f of frames) {
    origin.push(f);
    if (origin.filter((x) => x.type === 'part').length >= 5) break;
  }
  const start = origin.find((f) => f.type === 'start') as Extract<Frame, { type: 'start' }>;
  const follower: Frame[] = [];
  const follow = await app.api(`/api/conversations/${conversationId}/messages/${start.messageId}/stream`, {
    cookie,
  });
  for await (const f of readFrames(follow)) follower.push(f);
  const [fired] = await app.db.sql`select last_value, is_called from finish_failed`;
  expect(fired!.is_called).toBe(true);
  expect(follower.at(-1)).toMatchObject({
    type: 'finish',
    messageId: start.messageId,
    status: 'interrupted',
  });
  const [row] = await app.db.sql<{ status: string; error: string; text: string }[]>`
    select status, error, text from messages where id = ${start.messageId}`;
  expect(row).toMatchObject({
    status: 'interrupted',
    error: expect.stringContaining('could not be completed'),
  });
  // All of it, not only what the last checkpoint had: this server still held the Parts when the write failed.
  expect(row!.text).toBe(Array.from({ length: 40 }, (_, i) => `u${i} `).join(''));
});
