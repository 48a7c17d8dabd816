import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inOneTrip, transaction } from '../../src/db/index.ts';
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

// ADR 0075: the turn's claim commits without waiting for the disk. That must stay the claim's own: the connection
// goes back to the pool and carries checkpoints and replies' ends next, which must wait.
it('inOneTrip with flush: false commits without waiting for the disk, and the connection waits again after, even when it failed', async () => {
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  // Sent at once (`execute`), as inOneTrip asks: ahead of its COMMIT.
  const setting = async (q: postgres.Sql | postgres.ReservedSql) => {
    const sent = q`select current_setting('synchronous_commit') as s`.execute();
    return ((await sent) as unknown as [{ s: string }])[0].s;
  };
  try {
    const before = await setting(sql);
    expect(before).not.toBe('off');
    expect(await inOneTrip(sql, (tx) => setting(tx), { flush: false })).toBe('off');
    expect(await inOneTrip(sql, (tx) => setting(tx))).toBe(before);
    // Committed, and visible to the next statement at once.
    await inOneTrip(sql, (tx) => tx`insert into marks values (-2, 1)`.execute(), { flush: false });
    expect((await sql`select 1 from marks where tx = -2`).length).toBe(1);
    // One connection in all: whatever ran after ran where the setting was made.
    expect(await setting(sql)).toBe(before);
    await expect(
      inOneTrip(sql, (tx) => tx`insert into marks values (null, 1)`.execute(), { flush: false }),
    ).rejects.toThrow(/null/);
    expect(await setting(sql)).toBe(before);
    expect((await sql`select 1 from marks where tx is null`).length).toBe(0);
  } finally {
    await sql.end({ timeout: 5 });
  }
});
