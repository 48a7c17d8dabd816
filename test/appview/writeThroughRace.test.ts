import { TID } from '@atproto/common-web';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Batcher } from '../../src/appview/batcher.ts';
import { indexRecords, removeRecord, removeRecords, underAuthorLock } from '../../src/appview/store.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { holdOpen } from '../support/hold.ts';

// An unpublish's write-through removes the thread from the index under the author's lock while the stream's
// batch of an older version of it (the publish's own event, late) is being written. The batch must not check
// the tombstones before the removal and write after it: the thread would come back after the Player took it
// down. The interleaving is forced: the removal holds its transaction open until the batch is seen waiting.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

const DID = 'did:plc:bbbbbbbbbbbbbbbbbbbbbbbb';
const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
const record = (title: string) => ({
  $type: 'click.aligned.chat.session',
  title,
  createdAt: '2026-11-01T00:00:00.000Z',
});

async function someoneWaits(): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const [row] = await db.sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`;
    if (row!.n > 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the batch never waited on the removal');
}

it("a stream batch of an older version, written while an unpublish's removal is under way, does not bring the thread back", async () => {
  const rkey = TID.nextStr();
  const uri = `at://${DID}/click.aligned.chat.session/${rkey}`;
  const [first, second, deleting] = [TID.nextStr(), TID.nextStr(), TID.nextStr()];
  // Published (the write-through), then changed: the second version's event is still on its way.
  await indexRecords(db.sql, DID, [
    { collection: record('').$type, rkey, cid: CID, record: record('v1'), rev: first },
  ]);
  const indexed = async () => (await db.sql`select 1 from index_sessions where uri = ${uri}`).length > 0;
  expect(await indexed()).toBe(true);

  const removal = await holdOpen((body) =>
    underAuthorLock(db.sql, DID, async (tx) => {
      await removeRecord(tx, uri, deleting);
      await body();
    }),
  );

  const batcher = new Batcher(db.sql, 'relay', { onError: () => {}, onSkip: () => {} });
  const [state] = await db.sql<
    { cursor: number }[]
  >`select coalesce(cursor, 0)::int as cursor from index_state`;
  const cursor = state!.cursor;
  await batcher.add({
    kind: 'upsert',
    at: cursor + 1,
    did: DID,
    collection: 'click.aligned.chat.session',
    rkey,
    cid: CID,
    record: record('v2'),
    rev: second,
  });
  const written = batcher.flush();
  // The fault the test is about has happened: the batch is under way and blocked by the open removal.
  await someoneWaits();
  await removal.release();
  await written;
  expect(await indexed()).toBe(false);
  // The stream still indexes a version newer than the delete (the author wrote the record again).
  await batcher.add({
    kind: 'upsert',
    at: cursor + 2,
    did: DID,
    collection: 'click.aligned.chat.session',
    rkey,
    cid: CID,
    record: record('v3'),
    rev: TID.nextStr(),
  });
  await batcher.flush();
  expect(await indexed()).toBe(true);
});

it("an unpublish's removal takes the whole thread in one go: every record older than the delete, none newer", async () => {
  const session = TID.nextStr();
  const sessionUri = `at://${DID}/click.aligned.chat.session/${session}`;
  const turn = (rkey: string, rev: string) => ({
    collection: 'click.aligned.chat.message',
    rkey,
    cid: CID,
    rev,
    record: {
      $type: 'click.aligned.chat.message',
      session: sessionUri,
      role: 'user',
      text: rkey,
      createdAt: '2026-11-01T00:00:00.000Z',
    },
  });
  const keys = Array.from({ length: 30 }, () => TID.nextStr());
  const before = TID.nextStr();
  await indexRecords(db.sql, DID, [
    { collection: 'click.aligned.chat.session', rkey: session, cid: CID, record: record('t'), rev: before },
    ...keys.slice(0, 29).map((k) => turn(k, before)),
  ]);
  const deleting = TID.nextStr();
  // The last turn was written again after the delete's commit (elsewhere, by its author): it stays.
  await indexRecords(db.sql, DID, [turn(keys[29]!, TID.nextStr())]);
  const uris = [sessionUri, ...keys.map((k) => `at://${DID}/click.aligned.chat.message/${k}`)];
  // A URI named twice is one tombstone.
  await removeRecords(
    db.sql,
    [...uris, uris[1]!].map((uri) => ({ uri, rev: deleting })),
  );
  const left = await db.sql<
    { uri: string }[]
  >`select uri from index_messages where session_uri = ${sessionUri}
    union all select uri from index_sessions where uri = ${sessionUri}`;
  expect(left.map((r) => r.uri)).toEqual([uris[30]]);
  const [tombs] = await db.sql<{ n: number; revs: string[] }[]>`
    select count(*)::int as n, array_agg(distinct rev) as revs from index_tombstones where uri = any(${uris}::text[])`;
  expect(tombs).toEqual({ n: 31, revs: [deleting] });
});
