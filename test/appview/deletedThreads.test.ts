import { TID } from '@atproto/common-web';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readerSource } from '../../src/appview/index.ts';
import { Network } from '../../src/appview/network.ts';
import { getThreadJson } from '../../src/appview/read.ts';
import { indexRecords, removeRecord } from '../../src/appview/store.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// A thread the index holds a delete of is not looked for in its author's repo by the reading page, which says it
// is gone (410), not missing. One the index never saw is looked for; and getThread (XRPC, the reader's API) looks
// even for a deleted one: published again, its delete may have reached the index after the new record.
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
  const source = readerSource({ sql: db.sql, reader: deleted.network, baseUrl: 'http://localhost' });
  expect(await source.thread(did, rkey)).toBe('gone');
  expect(deleted.calls).toEqual([]);

  // getThread looks even for the deleted one.
  const xrpc = counting();
  await getThreadJson(db.sql, xrpc.network, uri).catch(() => null);
  expect(xrpc.calls.length).toBeGreaterThan(0);
  // The page looks for a key the index never saw (and fails here: there is no network).
  const unseen = counting();
  const pages = readerSource({ sql: db.sql, reader: unseen.network, baseUrl: 'http://localhost' });
  await pages.thread('did:plc:deletedthreads0000000001', TID.nextStr()).catch(() => null);
  expect(unseen.calls.length).toBeGreaterThan(0);
});
