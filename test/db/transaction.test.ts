import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inOneTripAnswered, transaction } from '../../src/db/index.ts';
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

// inOneTripAnswered (ADR 0099): the statements' answer comes before the COMMIT is flushed; `committed` tells how
// the COMMIT went; the connection goes back to the pool either way, with no transaction left open.
it('one trip, answered early: the answer precedes the COMMIT, whose failure is told, and the connection is freed', async () => {
  await db.sql.unsafe(`
    create table early (n int not null);
    create function early_commit() returns trigger language plpgsql as $$
    begin
      if new.n < 0 then raise exception 'refused at commit'; end if;
      perform pg_sleep(0.3);
      return null;
    end $$;
    create constraint trigger early_commit after insert on early deferrable initially deferred
      for each row execute function early_commit();`);
  // One connection: one left reserved would hang every query after it.
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    const seen = () => sql`select count(*)::int as n from early`.then((r) => r[0]!.n as number);
    const { out, committed } = await inOneTripAnswered(sql, async (tx) => {
      const [row] = await tx`insert into early values (1) returning n`.execute();
      return row!.n as number;
    });
    expect(out).toBe(1);
    // The COMMIT is still sleeping in its trigger: another connection sees nothing yet.
    expect((await db.sql`select count(*)::int as n from early`)[0]!.n).toBe(0);
    await committed;
    expect(await seen()).toBe(1);

    const failing = await inOneTripAnswered(sql, async (tx) => {
      const [row] = await tx`insert into early values (-1) returning n`.execute();
      return row!.n as number;
    });
    expect(failing.out).toBe(-1);
    await expect(failing.committed).rejects.toThrow('refused at commit');
    expect(await seen()).toBe(1);

    // A statement that fails is thrown, after the COMMIT rolled the transaction back.
    await expect(
      inOneTripAnswered(sql, async (tx) => {
        await tx`insert into early values (null)`.execute();
        return 0;
      }),
    ).rejects.toThrow(/null value/);
    expect(await seen()).toBe(1);
    const open = await db.sql`select 1 from pg_stat_activity
      where datname = current_database() and state like 'idle in transaction%'`;
    expect(open.length).toBe(0);
  } finally {
    await sql.end({ timeout: 5 });
  }
});
