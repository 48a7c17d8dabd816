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

// A connection that dies mid-transaction (PostgreSQL restarted, a failover, an operator's pg_terminate_backend):
// the failure is thrown, nothing more is sent on the dead connection (unpatched, postgres.js ended this process
// from a timer: porsager/postgres#1208, ADR 0104), and the pool goes on with a new one.
it('a connection lost mid-transaction: the failure is thrown, the process lives, and the pool goes on', async () => {
  await db.sql.unsafe(`
    create table lost (n int not null);
    create function lost_commit() returns trigger language plpgsql as $$
    begin perform pg_sleep(5); return null; end $$;
    create constraint trigger lost_commit after insert on lost deferrable initially deferred
      for each row execute function lost_commit();`);
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  const kill = (pid: number) => db.sql`select pg_terminate_backend(${pid})`;
  // postgres.js 3.4.9 hands the killed backend's own error (57P01) to the next query once (porsager/postgres#1215);
  // the one after runs on a new connection.
  const stored = async () => {
    const first = await sql`select count(*)::int as n from lost`.catch((e: { code?: string }) => e);
    if ('code' in first) expect(first.code).toBe('57P01');
    return (await sql`select count(*)::int as n from lost`)[0]!.n as number;
  };
  try {
    // Killed while its COMMIT is being made.
    const { out: pid, committed } = await inOneTripAnswered(sql, async (tx) => {
      const [row] = await tx`insert into lost values (1) returning pg_backend_pid() as pid`.execute();
      return row!.pid as number;
    });
    await kill(pid);
    await expect(committed).rejects.toThrow();
    // Any write postgres.js scheduled for the dead connection runs now: it would throw from its timer.
    await new Promise((r) => setTimeout(r, 100));
    expect(await stored()).toBe(0);

    // Killed while a statement of the transaction runs.
    const [{ pid: next }] = (await sql`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
    // Its failure is taken as it comes (it comes while the kill is awaited).
    const failed = transaction(sql, async (tx) => {
      await tx`insert into lost values (2)`;
      await tx`select pg_sleep(5)`;
    }).then(
      () => null,
      (e: Error) => e,
    );
    // Killed once the statement is running (a kill between two statements: test/db/closedConnection.test.ts).
    let running = false;
    for (let i = 0; i < 200 && !running; i++) {
      running =
        (
          await db.sql`select 1 from pg_stat_activity
          where pid = ${next} and state = 'active' and query = 'select pg_sleep(5)'`
        ).length > 0;
      if (!running) await new Promise((r) => setTimeout(r, 20));
    }
    expect(running).toBe(true);
    await kill(next);
    expect(await failed).toBeInstanceOf(Error);
    await new Promise((r) => setTimeout(r, 100));
    expect(await stored()).toBe(0);
    expect(await transaction(sql, async (tx) => (await tx`select 7 as n`)[0]!.n)).toBe(7);
  } finally {
    await sql.end({ timeout: 5 });
  }
});

it('a lost connection is told from any other failure', async () => {
  const { connectionLost } = await import('../../src/db/index.ts');
  const socket = (code: string) => Object.assign(new Error(code), { code, syscall: 'read' });
  for (const code of ['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED'])
    expect(connectionLost(Object.assign(new Error(code), { code }))).toBe(true);
  expect(connectionLost(socket('ECONNRESET'))).toBe(true);
  expect(connectionLost(socket('EPIPE'))).toBe(true);
  // A file's or a name's failure is not the connection's; nor is anything the server answered, FATAL included
  // (postgres.js hands a dead backend's FATAL to the next query of a new, healthy connection).
  expect(connectionLost(socket('ENOENT'))).toBe(false);
  expect(connectionLost(socket('ENOTFOUND'))).toBe(false);
  const fatal = new postgres.PostgresError({
    message: 'terminating connection',
    severity: 'FATAL',
    code: '57P01',
  } as never);
  expect(connectionLost(fatal)).toBe(false);
  expect(connectionLost(Object.assign(new Error('Conversation not found'), { code: 'NOT_FOUND' }))).toBe(
    false,
  );
  expect(connectionLost('CONNECTION_CLOSED')).toBe(false);
  expect(connectionLost(null)).toBe(false);
});
