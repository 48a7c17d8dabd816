import { afterAll, beforeAll, expect, it } from 'vitest';
import { upsertPlayer } from '../../src/auth/index.ts';
import { spendingByPlayer } from '../../src/conversations/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// The admins' per-Player spending: this month's tokens from daily_spend, each Player named by DID and handle.
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

it('lists this month’s spenders by DID and handle, biggest first, ties by DID', async () => {
  const [big, none, tieB, tieA] = await Promise.all([
    upsertPlayer(db.sql, 'did:plc:spendbig', 'big.test'),
    upsertPlayer(db.sql, 'did:plc:spendnone', null),
    upsertPlayer(db.sql, 'did:plc:spendtieb', 'b.test'),
    upsertPlayer(db.sql, 'did:plc:spendtiea', 'a.test'),
  ]);
  const spend = (playerId: string, day: string, tokens: number) =>
    db.sql`insert into daily_spend (day, player_id, tokens) values (${db.sql.unsafe(day)}, ${playerId}, ${tokens})`;
  const today = "(now() at time zone 'utc')::date";
  const monthStart = "date_trunc('month', now() at time zone 'utc')::date";
  const lastMonth = `${monthStart} - 1`;
  await spend(big.id, today, 100);
  await spend(big.id, lastMonth, 5000);
  // The first of the month is today on the 1st: then it counts for today too.
  const firstIsToday = new Date().getUTCDate() === 1;
  if (!firstIsToday) await spend(big.id, monthStart, 900);
  await spend(none.id, today, 7);
  await spend(tieB.id, today, 50);
  await spend(tieA.id, today, 50);
  // Spent by a Player since deleted: nobody to name.
  await spend(crypto.randomUUID(), today, 99999);

  expect(await spendingByPlayer(db.sql)).toEqual([
    { did: big.did, handle: 'big.test', today: 100, month: firstIsToday ? 100 : 1000 },
    { did: tieA.did, handle: 'a.test', today: 50, month: 50 },
    { did: tieB.did, handle: 'b.test', today: 50, month: 50 },
    { did: none.did, handle: null, today: 7, month: 7 },
  ]);
  expect((await spendingByPlayer(db.sql, 2)).map((r) => r.did)).toEqual([big.did, tieA.did]);
});
