import { startTestApp, type TestApp } from '../../test/support/app.ts';
import { setupConversation } from '../../test/support/turns.ts';
import type { Figure } from '../bench.ts';
import { median, round } from './stats.ts';

const ROUNDS = 20;

/**
 * Attaching to a reply mid-stream against starting a turn: the time to the first frame of each, side by side, on
 * the path a Player takes (POST a Message / GET the reply's stream), with two server instances on one database.
 * The follower attaches through the other instance (PostgreSQL carries the reply) and through the writer itself.
 */
export async function* replyFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  const a = await startTestApp({}, {}, { adminDatabaseUrl });
  const b = await startTestApp({}, {}, { db: a.db, fake: a.fake });
  try {
    await a.db.sql`update village_settings set turns_per_minute = 10000, concurrent_streams = 1000,
      player_daily_tokens = 1000000000000, village_daily_tokens = 1000000000000`;
    const { cookie } = await a.signIn();
    const fresh: number[] = [];
    const elsewhere: number[] = [];
    const here: number[] = [];
    for (let round = 0; round < ROUNDS + 3; round++) {
      const { conversationId } = await setupConversation(a, cookie);
      // A reply that streams for a while: words every 10 ms until the client side says stop.
      let stop = false;
      a.fake.enqueue(async (r) => {
        for (let i = 0; i < 2000 && !stop; i++) {
          r.text(`w${i} `);
          await r.wait(10);
        }
        r.finish();
      });
      const t0 = performance.now();
      const res = await a.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: 'Go' },
      });
      const reader = res.body!.getReader();
      const first = await reader.read();
      const freshMs = performance.now() - t0;
      const messageId = /"messageId":"([^"]+)"/.exec(new TextDecoder().decode(first.value))![1]!;
      await new Promise((r) => setTimeout(r, 100));
      const attach = async (app: TestApp) => {
        const t = performance.now();
        const follow = await app.api(`/api/conversations/${conversationId}/messages/${messageId}/stream`, {
          cookie,
        });
        const r = follow.body!.getReader();
        await r.read();
        const ms = performance.now() - t;
        await r.cancel();
        return ms;
      };
      // Alternate which is measured first, so neither always meets a warmer server.
      let other: number;
      let same: number;
      if (round % 2) {
        other = await attach(b);
        same = await attach(a);
      } else {
        same = await attach(a);
        other = await attach(b);
      }
      stop = true;
      await reader.cancel();
      await waitSettled(a, messageId);
      if (round >= 3) {
        fresh.push(freshMs);
        elsewhere.push(other);
        here.push(same);
      }
    }
    const f = median(fresh);
    const e = median(elsewhere);
    yield {
      figure: 'resume_attach_ms_ratio',
      value: round(e / f, 2),
      unit: 'ratio',
      target: '<= 2 (attaching from another instance ÷ a fresh turn, time to first frame)',
      attach_other_instance_ms: round(e, 1),
      attach_same_instance_ms: round(median(here), 1),
      fresh_turn_first_frame_ms: round(f, 1),
    };
  } finally {
    await b.close();
    await a.close();
  }
}

async function waitSettled(app: TestApp, messageId: string) {
  for (let i = 0; i < 400; i++) {
    const [row] = await app.db.sql`select status from messages where id = ${messageId}`;
    if (row?.status !== 'streaming') return;
    await new Promise((r) => setTimeout(r, 10));
  }
}
