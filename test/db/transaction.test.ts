import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { commitWith, transaction } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
  await db.sql`create table marks (tx int not null, n int not null)`;
});
afterAll(() => db?.drop());

// The conditions under which postgres.js 3.4.9's sql.begin sends BEGIN without reserving its connection
// (porsager/postgres#823): a small pool whose connections are busy and pipelines full, transactions and plain
// queries arriving together. Our transactions must each run alone on their connection, and leave none open.
it('transactions under a full, busy pool: every one commits on a connection of its own, none left open', async () => {
  // max_pipeline is a real option the typings leave out.
  const sql = postgres(db.url, { max: 3, max_pipeline: 2, onnotice: () => {} } as postgres.Options<
    Record<string, never>
  >);
  try {
    for (let round = 0; round < 12; round++) {
      const busy = [0, 1, 2].map(() => sql`select pg_sleep(0.2)`.execute());
      // The three connections are busy before the rest arrives.
      await new Promise((r) => setTimeout(r, 20));
      const plain = Array.from({ length: 6 }, () => sql`select 1`);
      const txs = Array.from({ length: 5 }, (_, i) =>
        transaction(sql, async (tx) => {
          const id = round * 10 + i;
          const [{ pid }] = (await tx`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
          await tx`insert into marks values (${id}, 1)`;
          await tx`insert into marks values (${id}, 2)`;
          // Still on the same backend, inside the same transaction.
          const [{ same, inTx }] = (await tx`select pg_backend_pid() = ${pid} as same,
            now() = statement_timestamp() as "inTx"`) as unknown as [{ same: boolean; inTx: boolean }];
          expect(same).toBe(true);
          expect(inTx).toBe(false);
          return id;
        }),
      );
      await Promise.all([...busy, ...plain, ...txs]);
    }
    const [{ count }] = (await sql`select count(*)::int as count from marks`) as unknown as [
      { count: number },
    ];
    expect(count).toBe(12 * 5 * 2);
    // A rolled-back one leaves nothing, and the connection is usable after.
    await expect(
      transaction(sql, async (tx) => {
        await tx`insert into marks values (-1, 1)`;
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect((await sql`select 1 from marks where tx = -1`).length).toBe(0);
    const open = await sql`select 1 from pg_stat_activity
      where datname = current_database() and state like 'idle in transaction%'`;
    expect(open.length).toBe(0);
  } finally {
    await sql.end({ timeout: 5 });
  }
});

// The claim and its COMMIT go out together (commitWith): the writes before it land with it, or none does.
it('commitWith: the last statement commits with the rest; when it fails, everything is rolled back', async () => {
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    const kept = await transaction(sql, async (tx) => {
      await tx`insert into marks values (1000, 1)`;
      const rows = await commitWith(tx, tx<{ n: number }[]>`insert into marks values (1000, 2) returning n`);
      return rows.map((r) => r.n);
    });
    expect(kept).toEqual([2]);
    expect((await sql`select n from marks where tx = 1000 order by n`).map((r) => r.n)).toEqual([1, 2]);

    await expect(
      transaction(sql, async (tx) => {
        await tx`insert into marks values (1001, 1)`;
        // Fails (n is not null): the COMMIT behind it must roll the first insert back.
        await commitWith(tx, tx`insert into marks values (1001, null)`);
      }),
    ).rejects.toThrow(/null value/);
    expect((await sql`select 1 from marks where tx = 1001`).length).toBe(0);
    // The one connection is usable, and no transaction is left open on it.
    expect((await sql`select 1 as one`).length).toBe(1);
    const open = await db.sql`select 1 from pg_stat_activity
      where datname = current_database() and state like 'idle in transaction%'`;
    expect(open.length).toBe(0);
  } finally {
    await sql.end({ timeout: 5 });
  }
});
