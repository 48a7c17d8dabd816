// The SQL statements of one warm 200-delta turn, counted and printed one a line (postgres.js's onQuery):
//   node --import tsx scripts/bench/turnStatements.ts
// The live-publishing poller's statement may land in the window: it is not the turn's.
import { startTestApp } from '../../test/support/app.ts';

let statements: string[] | undefined;
const app = await startTestApp(
  { checkpointMs: 250 },
  {},
  {
    adminDatabaseUrl: process.env.TEST_DATABASE_URL ?? process.env.BENCH_DATABASE_URL,
    onQuery: (q) => statements?.push(q),
  },
);
await app.db.sql`update village_settings set turns_per_minute = 10000, concurrent_streams = 1000,
  player_daily_tokens = 1000000000000, village_daily_tokens = 1000000000000, max_conversations = 1000000`;
const { cookie } = await app.signIn();
const npc = (await (await app.api('/api/npcs', { cookie, body: { name: 'Bench' } })).json()) as {
  npc: { id: string };
};
const c = (await (
  await app.api('/api/conversations', { cookie, body: { npcIds: [npc.npc.id] } })
).json()) as { conversation: { id: string } };
const turn = async () => {
  app.fake.enqueue((r) => {
    for (let i = 0; i < 200; i++) r.text(`t${i % 10} `);
    r.finish('stop', { prompt_tokens: 10, completion_tokens: 200 });
  });
  const res = await app.api(`/api/conversations/${c.conversation.id}/messages`, {
    cookie,
    body: { text: 'Go on.' },
  });
  await res.text();
};
for (let i = 0; i < 3; i++) await turn();
statements = [];
await turn();
await new Promise((r) => setTimeout(r, 500));
const got = statements;
statements = undefined;
console.log(`statements: ${got.length}`);
for (const q of got) console.log('---', q.replace(/\s+/g, ' ').slice(0, 300));
await app.close();
