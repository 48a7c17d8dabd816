import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { TID } from '@atproto/common-web';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Network } from '../../src/appview/network.ts';
import { getThreadBody, getThreadJson } from '../../src/appview/read.ts';
import { indexRecords, removeRecord } from '../../src/appview/store.ts';
import { setThreadCacheBytes, threadCacheBytes } from '../../src/appview/threadCache.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { noNetwork, userTurn } from '../support/records.ts';

// #32: getThread and the reader serve a thread from each instance's memory while it is unchanged, and every
// instance sees a change written through any other at its next read: the thread's version is read from the
// database with every read (one lookup by key), so no instance serves what another has changed. Two instances
// here: this process and a second one (test/support/threadReader.ts), each with its own cache.

let db: TestDatabase;
let other: ChildProcess;
let ask: (uri: string) => Promise<Thread | null>;
beforeAll(async () => {
  db = await createTestDatabase();
  other = spawn(process.execPath, ['--import', 'tsx', 'test/support/threadReader.ts', db.url], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const answers = createInterface({ input: other.stdout! })[Symbol.asyncIterator]();
  ask = async (uri) => {
    other.stdin!.write(`${uri}\n`);
    const { value, done } = await answers.next();
    if (done) throw new Error('the other instance exited');
    return JSON.parse(value) as Thread | null;
  };
});
afterAll(async () => {
  other?.stdin?.end();
  other?.kill();
  await db?.drop();
});

interface Thread {
  session: { cid: string; record: { title: string }; author: { handle?: string }; turns: number };
  messages: { uri: string; record: { text?: string; withheld?: boolean } }[];
}

const DID = 'did:plc:cachecachecachecachecach';
const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
const CID2 = 'bafyreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku';
const here = async (uri: string) => {
  const json = await getThreadJson(db.sql, noNetwork, uri);
  return json === null ? null : (JSON.parse(json) as Thread);
};
const texts = (t: Thread | null) => t?.messages.map((m) => (m.record.withheld ? 'withheld' : m.record.text));

it('a change written through one instance is served by every instance at its next read', async () => {
  const sql = db.sql;
  const rkey = TID.nextStr();
  const uri = `at://${DID}/click.aligned.chat.session/${rkey}`;
  await sql`insert into index_actors (did, handle, verified_at) values (${DID}, 'cache.test', now())`;
  const session = (title: string, cid: string) =>
    indexRecords(sql, DID, [
      {
        collection: 'click.aligned.chat.session',
        rkey,
        cid,
        record: { $type: 'click.aligned.chat.session', title, createdAt: '2026-11-01T00:00:00.000Z' },
      },
    ]);
  const turnKeys = [TID.nextStr(), TID.nextStr(), TID.nextStr(), TID.nextStr()];
  const turn = (i: number, text: string) =>
    indexRecords(sql, DID, [
      {
        collection: 'click.aligned.chat.message',
        rkey: turnKeys[i]!,
        cid: CID,
        record: userTurn(uri, text),
      },
    ]);
  await session('First', CID);
  await turn(0, 'aaa');
  await turn(1, 'bbb');
  await turn(2, 'ccc');
  // Both instances read it twice: the second read of each is its own cache's.
  for (const read of [here, ask, here, ask]) expect(texts(await read(uri))).toEqual(['aaa', 'bbb', 'ccc']);

  // Each kind of change, written here, then read there first (and here after).
  const changes: [string, () => Promise<unknown>, (t: Thread | null) => void][] = [
    ['a turn added', () => turn(3, 'ddd'), (t) => expect(texts(t)).toEqual(['aaa', 'bbb', 'ccc', 'ddd'])],
    // The same size, in the same thread: only the thread's version says it changed.
    ['a turn rewritten', () => turn(1, 'BBB'), (t) => expect(texts(t)).toEqual(['aaa', 'BBB', 'ccc', 'ddd'])],
    [
      'a turn deleted',
      () => removeRecord(sql, `at://${DID}/click.aligned.chat.message/${turnKeys[2]}`),
      (t) => expect(texts(t)).toEqual(['aaa', 'BBB', 'ddd']),
    ],
    [
      'the session retitled',
      () => session('Second', CID2),
      (t) => expect(t?.session.record.title).toBe('Second'),
    ],
    [
      'a turn hidden by a label',
      () => sql`insert into labels (src, uri, val, cts)
        values ('did:plc:labeler', ${`at://${DID}/click.aligned.chat.message/${turnKeys[0]}`}, '!hide', now())`,
      (t) => expect(texts(t)).toEqual(['withheld', 'BBB', 'ddd']),
    ],
    [
      'the author renamed',
      () => sql`update index_actors set handle = 'renamed.test', verified_at = now() where did = ${DID}`,
      (t) => expect(t?.session.author.handle).toBe('renamed.test'),
    ],
    [
      'the author taken down',
      () => sql`update index_actors set status = 'takendown' where did = ${DID}`,
      (t) => expect(t).toBeNull(),
    ],
  ];
  for (const [, write, check] of changes) {
    await write();
    check(await ask(uri));
    check(await here(uri));
    // And again, from each cache.
    check(await ask(uri));
    check(await here(uri));
  }
}, 60_000);

it("a thread whose author's handle does not verify is kept too, and shows the handle once it does", async () => {
  const sql = db.sql;
  const did = 'did:plc:nohandlenohandlenohandle';
  const rkey = TID.nextStr();
  const uri = `at://${did}/click.aligned.chat.session/${rkey}`;
  await sql`insert into index_actors (did) values (${did})`;
  await indexRecords(sql, did, [
    {
      collection: 'click.aligned.chat.session',
      rkey,
      cid: CID,
      record: {
        $type: 'click.aligned.chat.session',
        title: 'Nameless',
        createdAt: '2026-11-01T00:00:00.000Z',
      },
    },
    { collection: 'click.aligned.chat.message', rkey: TID.nextStr(), cid: CID, record: userTurn(uri, 'one') },
  ]);
  // The network never verifies a handle for it: each read asks, and the answer is the one kept (the same bytes).
  let asked = 0;
  const network = {
    identity: async () => {
      asked++;
      return null;
    },
    didOf: async () => null,
  } as unknown as Network;
  const first = await getThreadBody(sql, network, uri);
  // The author's row as the first read left it: a read that learns nothing new writes nothing (a new row version
  // would have a new xmin).
  const version = async () => (await sql`select xmin::text as v from index_actors where did = ${did}`)[0]!.v;
  const before = await version();
  const second = await getThreadBody(sql, network, uri);
  expect(first).not.toBeNull();
  expect(second!.body).toBe(first!.body);
  expect(asked).toBeGreaterThan(0);
  expect(await version()).toBe(before);
  // Verified since: a new answer, with the handle.
  await sql`update index_actors set handle = 'named.test', verified_at = now() where did = ${did}`;
  const named = await getThreadBody(sql, network, uri);
  expect(named!.body).not.toBe(first!.body);
  expect((JSON.parse(named!.body.toString()) as Thread).session.author.handle).toBe('named.test');
});

it('keeps threads within a byte budget: the oldest go first, and one past a quarter of it is not kept', async () => {
  const sql = db.sql;
  const did = 'did:plc:bytesbytesbytesbytesbyte';
  await sql`insert into index_actors (did, handle, verified_at) values (${did}, 'bytes.test', now())`;
  /** A thread of `turns` turns of 12,000 characters each (about 12 KB a turn). */
  const thread = async (turns: number) => {
    const rkey = TID.nextStr();
    const uri = `at://${did}/click.aligned.chat.session/${rkey}`;
    await indexRecords(sql, did, [
      {
        collection: 'click.aligned.chat.session',
        rkey,
        cid: CID,
        record: { $type: 'click.aligned.chat.session', title: 'Big', createdAt: '2026-11-01T00:00:00.000Z' },
      },
      ...Array.from({ length: turns }, (_, i) => ({
        collection: 'click.aligned.chat.message',
        rkey: TID.nextStr(),
        cid: CID,
        record: userTurn(uri, `${i} ${'w'.repeat(12_000)}`),
      })),
    ]);
    return uri;
  };
  setThreadCacheBytes(300_000);
  try {
    // Six threads of about 60 KB: more than the budget holds together.
    const uris = [];
    for (let i = 0; i < 6; i++) uris.push(await thread(5));
    const first: Buffer[] = [];
    for (const uri of uris) {
      first.push((await getThreadBody(db.sql, noNetwork, uri))!.body);
      expect(threadCacheBytes()).toBeLessThanOrEqual(300_000);
    }
    expect(threadCacheBytes()).toBeGreaterThan(200_000);
    // The newest is kept (the same bytes again), the oldest was let go (read anew).
    expect((await getThreadBody(db.sql, noNetwork, uris[5]!))!.body).toBe(first[5]);
    expect((await getThreadBody(db.sql, noNetwork, uris[0]!))!.body).not.toBe(first[0]);
    // About 100 KB, past a quarter of the budget: served each time, never kept.
    const big = await thread(8);
    const once = (await getThreadBody(db.sql, noNetwork, big))!;
    expect(once.body.length).toBeGreaterThan(75_000);
    expect((await getThreadBody(db.sql, noNetwork, big))!.body).not.toBe(once.body);
    expect(threadCacheBytes()).toBeLessThanOrEqual(300_000);
  } finally {
    setThreadCacheBytes(128 * 1024 * 1024);
  }
});
