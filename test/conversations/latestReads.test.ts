import { afterAll, beforeAll, expect, it } from 'vitest';
import { pathLeaf } from '../../src/conversations/branches.ts';
import { lastPlayerTextSql } from '../../src/conversations/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// A Conversation's latest Messages are read by (conversation_id, seq), whatever the rest of the Village holds: a
// long Conversation (a large share of all Messages) gone quiet while others wrote many more must not be read
// backward through all of theirs (migration 054, ADR 0088).

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

/** Shared buffers a statement touched, from its plan as run. */
async function buffersOf(fragment: ReturnType<typeof pathLeaf>): Promise<number> {
  const [row] = await db.sql<{ 'QUERY PLAN': [{ Plan: Record<string, number> }] }[]>`
    explain (analyze, buffers, format json) select ${fragment} as x`;
  const plan = row!['QUERY PLAN'][0].Plan;
  return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
}

it("a long Conversation's last Messages are read from its own, not through every newer Message", async () => {
  const sql = db.sql;
  const [player] = await sql<{ id: string }[]>`
    insert into players (did, handle) values ('did:plc:latestlatestlatestlatest', 'latest.test') returning id`;
  const conversation = async () =>
    (
      await sql<{ id: string }[]>`insert into conversations (player_id) values (${player!.id}) returning id`
    )[0]!.id;
  const messages = (id: string, n: number) => sql`insert into messages (conversation_id, role, parts, text)
    select ${id}, 'player', '[{"type":"text","text":"hi"}]', 'hi' from generate_series(1, ${n})`;
  // The long one first, then as many in 100 others after it; the statistics as autovacuum would leave them.
  const long = await conversation();
  await messages(long, 30_000);
  for (let i = 0; i < 100; i++) await messages(await conversation(), 300);
  await sql`analyze messages`;

  // A handful of index pages each; through the newer Messages it was 800 and more (30,000 rows filtered out).
  expect(await buffersOf(pathLeaf(sql, long))).toBeLessThan(20);
  expect(await buffersOf(lastPlayerTextSql(sql, player!.id, long))).toBeLessThan(20);
}, 60_000);
