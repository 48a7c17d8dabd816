import { TID } from '@atproto/common-web';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readerSource } from '../../src/appview/index.ts';
import { Network } from '../../src/appview/network.ts';
import { getThreadJson } from '../../src/appview/read.ts';
import { indexRecords, removeRecord } from '../../src/appview/store.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// A thread the index holds a delete of is not looked for in its author's repo — by the XRPC read and the reader's
// page alike — and the page says it is gone (410), not missing. One the index never saw is looked for.
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
function counting() {
  const calls: string[] = [];
  const fetch: typeof globalThis.fetch = async (input) => {
    calls.push(String(input instanceof Request ? input.url : input));
    throw new TypeError('fetch failed (no network in this test)');
  };
  const network = new Network({
    handleResolver: 'http://127.0.0.1:9',
    plcUrl: 'http://127.0.0.1:9',
    local: true,
    fetch,
  });
  return { calls, network };
}

it('a deleted thread is not looked for in its repo; one never seen is', async () => {
  const did = 'did:plc:deletedthreads0000000000';
  await db.sql`insert into index_actors (did, handle, verified_at) values (${did}, 'gone.test', now())`;
  const rkey = TID.nextStr();
  const uri = `at://${did}/click.aligned.chat.session/${rkey}`;
  const record = {
    $type: 'click.aligned.chat.session',
    title: 'Soon gone',
    createdAt: new Date().toISOString(),
    agents: [{ name: 'Ada' }],
  };
  await indexRecords(db.sql, did, [{ collection: 'click.aligned.chat.session', rkey, cid: CID, record }]);
  await removeRecord(db.sql, uri);

  const deleted = counting();
  expect(await getThreadJson(db.sql, deleted.network, uri)).toBeNull();
  const source = readerSource({ sql: db.sql, reader: deleted.network, baseUrl: 'http://localhost' });
  expect(await source.thread(did, rkey)).toBe('gone');
  expect(deleted.calls).toEqual([]);

  // The same reads of a key the index never saw go to the author's repo (and fail here: there is no network).
  const unseen = counting();
  const other = `at://${did}/click.aligned.chat.session/${TID.nextStr()}`;
  await getThreadJson(db.sql, unseen.network, other).catch(() => null);
  expect(unseen.calls.length).toBeGreaterThan(0);
});
