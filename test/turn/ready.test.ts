import { afterAll, beforeAll, expect, it } from 'vitest';
import { readFrameStream } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { setupConversation } from '../support/turns.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
  await app.db.sql`update village_settings set turns_per_minute = 10000, concurrent_streams = 1000`;
  // The fault: releasing a turn's claim is slow (a busy database), which widens the window in which a client
  // that read the last frame could find the Conversation still claimed.
  await app.db.sql.unsafe(`
    create sequence slow_releases;
    create function slow_release() returns trigger language plpgsql as $$
    begin perform nextval('slow_releases'); perform pg_sleep(0.05); return new; end $$;
    create trigger slow_release before update on conversations for each row
      when (old.turn_owner is not null and new.turn_owner is null) execute function slow_release();`);
}, 60_000);
afterAll(() => app?.close());

it('a turn’s last frame means ready: the next Message, sent the moment it is read, is never refused', async () => {
  const { cookie } = await app.signIn();
  const conversations = await Promise.all(
    Array.from({ length: 10 }, () => setupConversation(app, cookie).then((c) => c.conversationId)),
  );
  const statuses: number[] = [];
  await Promise.all(
    conversations.map(async (id) => {
      for (let turn = 0; turn < 15; turn++) {
        app.fake.enqueue((r: Reply) => {
          r.text('ok');
          r.finish('stop', { prompt_tokens: 1, completion_tokens: 1 });
        });
        const res = await app.api(`/api/conversations/${id}/messages`, {
          cookie,
          body: { text: `t${turn}` },
        });
        statuses.push(res.status);
        if (res.status !== 200) return;
        // Read up to the finish frame, then send at once, without waiting for the stream to close.
        const reader = readFrameStream(res.body as never);
        for await (const frame of reader) if (frame.type === 'finish') break;
      }
    }),
  );
  expect(
    Number((await app.db.sql`select last_value from slow_releases`)[0]!.last_value),
  ).toBeGreaterThanOrEqual(150);
  expect(statuses).toHaveLength(150);
  expect(statuses.filter((s) => s !== 200)).toEqual([]);
}, 120_000);
