import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { LARGE_THREAD_BYTES, MAX_THREAD_TURNS } from '../../src/appview/fragments.ts';
import { LARGE_WAIT_MS } from '../../src/appview/places.ts';
import { getThreadBody } from '../../src/appview/read.ts';
import {
  type BodyHead,
  LARGE_READ_STATEMENT_MS,
  LARGE_READS_AT_ONCE,
  LARGE_READS_WAITING,
  largeReadsNow,
  largeReadsWaitingBy,
  readThreadBody,
} from '../../src/appview/threadBody.ts';
import { connect, type Sql } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { indexThread, noNetwork } from '../support/records.ts';

// A thread's turns are read whole for its answer: up to 16 MiB of rows, joined, and a database connection while
// they stream. Readers of one thread share one read; a large thread's read takes the one place, one author's at a
// time, and waits and holds its place for a bounded time.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

let n = 0;
const author = () => ({
  did: `did:plc:body${(++n).toString().padStart(20, '0')}`,
  handle: `body${n}.test`,
});
// 40 turns of some 42 KB each (█ is three bytes): 1.7 MB, past LARGE_THREAD_BYTES.
const largeTurns = Array.from({ length: 40 }, (_, i) => ({ role: 'user', text: `${i}`.padEnd(14_000, '█') }));

async function largeThread() {
  const writer = author();
  const { uri } = await indexThread(db.sql, writer, 'Long', largeTurns);
  const head: BodyHead = {
    did: writer.did,
    session: '{}',
    holes: false,
    bounded: false,
    large: true,
    empty: false,
  };
  return { did: writer.did, uri, head };
}

/**
 * A pool of one connection, held: reads on it wait (in their places) until `free`. What a read slow to stream looks
 * like to the places.
 */
async function heldPool(): Promise<{ sql: Sql; free: () => Promise<void> }> {
  const sql = connect(db.url, { max: 1, name: 'agentsville-test' });
  const held = await sql.reserve();
  return {
    sql,
    free: async () => {
      held.release();
    },
  };
}

it('a thread past a megabyte is read in a place, a smaller one in none; each answer is the whole thread', async () => {
  for (const [turns, large] of [
    [largeTurns, true],
    [largeTurns.slice(0, 20), false],
  ] as const) {
    const { uri } = await indexThread(db.sql, author(), 'Long', turns);
    // The places held when the turns' statement is sent.
    let held: number | undefined;
    const sql = connect(db.url, {
      max: 1,
      name: 'agentsville-test',
      onQuery: (q) => {
        if (/from index_messages m\s+where m.session_uri/.test(q)) held = largeReadsNow();
      },
    });
    const body = await getThreadBody(sql, noNetwork, uri);
    expect(held).toBe(large ? 1 : 0);
    expect(body!.body.length > LARGE_THREAD_BYTES).toBe(large);
    expect(JSON.parse(body!.body.toString()).messages).toHaveLength(turns.length);
    expect(largeReadsNow()).toBe(0);
    await sql.end();
  }
});

it('one large read at a time: the others wait in their lines, and past every line together are refused (503)', async () => {
  const [a, b] = [await largeThread(), await largeThread()];
  const held = await heldPool();
  // Author a's first read holds the place (waiting for the held connection); a's second and b's wait.
  const reads = [readThreadBody(held.sql, a.uri, a.head), readThreadBody(held.sql, a.uri, a.head)];
  await expect.poll(() => largeReadsWaitingBy(a.did)).toBe(1);
  expect(largeReadsNow()).toBe(LARGE_READS_AT_ONCE);
  reads.push(readThreadBody(held.sql, b.uri, b.head));
  await expect.poll(() => largeReadsWaitingBy(b.did)).toBe(1);
  // Every line together: LARGE_READS_WAITING waiting, whoever the authors (threads nobody wrote: read, they are
  // empty); the next is refused at once, not queued.
  const others = Array.from({ length: LARGE_READS_WAITING - 2 }, () => author().did);
  const empty = others.map((did) =>
    readThreadBody(held.sql, `at://${did}/click.aligned.chat.session/3k`, { ...a.head, did }),
  );
  await expect.poll(() => others.filter((did) => largeReadsWaitingBy(did) === 1).length).toBe(others.length);
  const late = author().did;
  const refused = readThreadBody(held.sql, a.uri, { ...a.head, did: late });
  expect(largeReadsWaitingBy(late)).toBe(0);
  await expect(refused).rejects.toMatchObject({ code: 'BUSY', status: 503 });
  await held.free();
  for (const read of await Promise.all(reads))
    expect(JSON.parse(read.body.toString()).messages).toHaveLength(40);
  for (const read of await Promise.all(empty)) expect(JSON.parse(read.body.toString()).messages).toEqual([]);
  expect(largeReadsNow()).toBe(0);
  await held.sql.end();
});

it('readers of one thread while it is read share the read: its rows are read once', async () => {
  const writer = author();
  const { uri } = await indexThread(db.sql, writer, 'Shared', largeTurns);
  const statements: string[] = [];
  const sql = connect(db.url, { max: 1, name: 'agentsville-test', onQuery: (q) => statements.push(q) });
  const answers = await Promise.all(Array.from({ length: 5 }, () => getThreadBody(sql, noNetwork, uri)));
  for (const answer of answers) expect(answer).toBe(answers[0]);
  expect(statements.filter((q) => /from index_messages m\s+where m.session_uri/.test(q))).toHaveLength(1);
  await sql.end();
});

it('a large read that waits too long for its place, or holds it too long awaiting a connection, is refused as busy (503)', async () => {
  const [a, c] = [await largeThread(), await largeThread()];
  const held = await heldPool();
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  try {
    const holders = [readThreadBody(held.sql, a.uri, a.head)];
    await expect.poll(() => largeReadsNow()).toBe(LARGE_READS_AT_ONCE);
    const late = readThreadBody(held.sql, c.uri, c.head);
    const refused = expect(late).rejects.toMatchObject({ code: 'BUSY', status: 503, retryAfter: 5 });
    await expect.poll(() => largeReadsWaitingBy(c.did)).toBe(1);
    vi.advanceTimersByTime(LARGE_WAIT_MS);
    await refused;
    expect(largeReadsWaitingBy(c.did)).toBe(0);
    // The holder's place runs out while it still awaits a connection: the place is given back, and the read, when a
    // connection comes, does not run in a place it no longer holds.
    vi.advanceTimersByTime(LARGE_READ_STATEMENT_MS + 5_000 - LARGE_WAIT_MS);
    expect(largeReadsNow()).toBe(0);
    vi.useRealTimers();
    await held.free();
    await expect(holders[0]).rejects.toMatchObject({ code: 'BUSY', status: 503 });
  } finally {
    vi.useRealTimers();
  }
  expect(largeReadsNow()).toBe(0);
  await held.sql.end();
});

it('a large read that runs past its time is ended by PostgreSQL and said as busy, its place and connection freed', async () => {
  const a = await largeThread();
  // The table locked by another transaction: the read's statement waits in PostgreSQL, holding its place.
  const locker = await db.sql.reserve();
  await locker`begin`;
  await locker`lock table index_messages in access exclusive mode`;
  try {
    const read = readThreadBody(db.sql, a.uri, a.head, 300);
    await expect.poll(() => largeReadsNow()).toBe(1);
    await expect(read).rejects.toMatchObject({ code: 'BUSY', status: 503 });
    expect(largeReadsNow()).toBe(0);
    // Nothing of the read is left running in the database.
    const [waiting] = await db.sql`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and state = 'active'
        and query like '%from index_messages m where m.session_uri%'`;
    expect(waiting!.n).toBe(0);
  } finally {
    await locker`rollback`;
    locker.release();
  }
  // And it reads once it can.
  expect(JSON.parse((await readThreadBody(db.sql, a.uri, a.head)).body.toString()).messages).toHaveLength(40);
});

it('a thread is read within the bounds, in a place, whatever its head said (it may have grown since)', async () => {
  const writer = author();
  // 5,001 turns of some 500 bytes: past the turns' bound, and past a megabyte.
  const turns = Array.from({ length: MAX_THREAD_TURNS + 1 }, (_, i) => ({
    role: 'user',
    text: `${i}`.padEnd(300, 'x'),
  }));
  const { uri } = await indexThread(db.sql, writer, 'Grown', turns);
  // Read as large, as small (it grew past a megabyte and 5,000 turns since), and as past the bounds in turns alone.
  for (const [large, bounded] of [
    [true, false],
    [false, false],
    [false, true],
  ]) {
    let held: number | undefined;
    const sql = connect(db.url, {
      max: 1,
      name: 'agentsville-test',
      onQuery: (q) => {
        if (/sum\(octet_length/.test(q)) held = largeReadsNow();
      },
    });
    const head: BodyHead = {
      did: writer.did,
      session: '{}',
      holes: false,
      bounded: bounded!,
      large: large!,
      empty: false,
    };
    const read = await readThreadBody(sql, uri, head);
    expect(JSON.parse(read.body.toString()).messages).toHaveLength(MAX_THREAD_TURNS);
    expect(held).toBe(1);
    await sql.end();
  }
}, 60_000);

it('an empty thread is answered without a read of its turns, and takes no place', async () => {
  const writer = author();
  const { uri } = await indexThread(db.sql, writer, 'Empty', []);
  const statements: string[] = [];
  const sql = connect(db.url, { max: 1, name: 'agentsville-test', onQuery: (q) => statements.push(q) });
  const answer = await getThreadBody(sql, noNetwork, uri);
  expect(JSON.parse(answer!.body.toString()).messages).toEqual([]);
  expect(statements.filter((q) => /from index_messages m/.test(q))).toEqual([]);
  expect(statements.some((q) => /statement_timeout/.test(q))).toBe(false);
  await sql.end();
});
