import { afterAll, beforeAll, expect, it } from 'vitest';
import { chargeTokens, todaysSpend } from '../../src/conversations/index.ts';
import { migrate } from '../../src/db/index.ts';
import { createDatabaseBefore, createTestDatabase, type TestDatabase } from '../support/db.ts';

// The Village's day is spread over slots (migration 053) so that the ends of different Players' turns do not queue
// on one row; every reader still sees the whole Village.
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

const slotOf = async (playerId: string) =>
  (await db.sql<{ s: number }[]>`select (hashtext(${playerId}::text) & 15)::int as s`)[0]!.s;

/** Players, each in a slot none of the others has. */
async function playersInSlots(n: number): Promise<string[]> {
  const bySlot = new Map<number, string>();
  while (bySlot.size < n) {
    const id = crypto.randomUUID();
    const s = await slotOf(id);
    if (!bySlot.has(s)) bySlot.set(s, id);
  }
  return [...bySlot.values()];
}

it("a charge answers with the Player's day and the whole Village's, its other slots included", async () => {
  const [a, b, c] = await playersInSlots(3);
  await db.sql`truncate village_spend`;
  expect(await chargeTokens(db.sql, a!, 100)).toEqual({ mine: 100, village: 100 });
  expect(await chargeTokens(db.sql, b!, 20)).toEqual({ mine: 20, village: 120 });
  expect(await chargeTokens(db.sql, a!, 0.5)).toEqual({ mine: 101, village: 121 });
  expect(await todaysSpend(db.sql, c!)).toEqual({ mine: 0, village: 121 });
  const slots = await db.sql<{ n: number }[]>`select count(*)::int as n from village_spend`;
  expect(slots[0]!.n).toBe(2);
  // Yesterday's tokens are not today's.
  await db.sql`insert into village_spend (day, slot, tokens) values ((now() at time zone 'utc')::date - 1, 7, 5000)`;
  expect(await todaysSpend(db.sql, a!)).toEqual({ mine: 101, village: 121 });
});

it('many Players charging at once lose no token, and the Village’s day is the sum of its slots', async () => {
  await db.sql`truncate village_spend`;
  const players = Array.from({ length: 24 }, () => crypto.randomUUID());
  const charges = players.flatMap((p, i) =>
    Array.from({ length: 5 }, (_, k) => ({ p, n: 1 + ((i * 5 + k) % 7) })),
  );
  const answers = await Promise.all(charges.map(({ p, n }) => chargeTokens(db.sql, p, n)));
  const total = charges.reduce((sum, { n }) => sum + n, 0);
  // Each answer counts its own charge and no more than there was; one charge in flight in another slot may be
  // missing from it (the statement's snapshot), as a turn admitted beside another cannot see that one either.
  expect(answers.every((a, i) => a!.village >= charges[i]!.n && a!.village <= total && a!.mine > 0)).toBe(
    true,
  );
  expect((await todaysSpend(db.sql, players[0]!)).village).toBe(total);
  const perPlayer = await db.sql<{ n: number }[]>`select coalesce(sum(tokens), 0)::int as n from daily_spend
    where day = (now() at time zone 'utc')::date and player_id in ${db.sql(players)}`;
  expect(perPlayer[0]!.n).toBe(total);
});

it('the migration moves the Village’s days from its one row into a slot, and leaves the Players’ days as they were', async () => {
  const old = await createDatabaseBefore((f) => f.endsWith('_village_spend_slots.sql'));
  try {
    const player = crypto.randomUUID();
    await old.sql`insert into daily_spend (day, player_id, tokens) values
      ((now() at time zone 'utc')::date, '00000000-0000-0000-0000-000000000000', 900),
      ((now() at time zone 'utc')::date - 1, '00000000-0000-0000-0000-000000000000', 40),
      ((now() at time zone 'utc')::date, ${player}, 300)`;
    await migrate(old.sql);
    expect(await todaysSpend(old.sql, player)).toEqual({ mine: 300, village: 900 });
    const left = await old.sql`select player_id::text as p, tokens::int as t from daily_spend`;
    expect(left).toEqual([{ p: player, t: 300 }]);
    const slots = await old.sql`select tokens::int as t from village_spend order by day`;
    expect(slots.map((r) => r.t)).toEqual([40, 900]);
  } finally {
    await old.drop();
  }
});
