import { TID } from '@atproto/common-web';
import fc from 'fast-check';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { getThreadJson } from '../../src/appview/read.ts';
import { indexRecords } from '../../src/appview/store.ts';
import type { Sql } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { noNetwork, userTurn } from '../support/records.ts';

// A thread is served in its turns' key order whatever order they were indexed and rewritten in, and whatever plan
// PostgreSQL picks: here it may not walk the thread's index (an index scan gives key order by itself), so rows come
// in the order they sit on disk — which indexing in a shuffled order, and rewriting turns, makes anything but
// key order. Only the read's own ORDER BY puts them right.

let db: TestDatabase;
let reader: Sql;
beforeAll(async () => {
  db = await createTestDatabase();
  const [{ name }] = (await db.sql`select current_database() as name`) as unknown as [{ name: string }];
  await db.sql.unsafe(`alter database "${name}" set enable_indexscan = off`);
  await db.sql.unsafe(`alter database "${name}" set enable_indexonlyscan = off`);
  // Connections opened after the change take it.
  reader = postgres(db.url, { max: 2, onnotice: () => {} }) as unknown as Sql;
  await db.sql`insert into index_actors (did, handle, verified_at) values (${DID}, 'order.test', now())`;
});
afterAll(async () => {
  await (reader as unknown as { end(): Promise<void> })?.end();
  await db?.drop();
});

const DID = 'did:plc:orderorderorderorderorde';
const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';

it('turns indexed in any order, some rewritten, are read in key order', async () => {
  const [{ plan }] = (await reader`select current_setting('enable_indexscan') as plan`) as unknown as [
    { plan: string },
  ];
  expect(plan).toBe('off');
  await fc.assert(
    fc.asyncProperty(
      fc
        .integer({ min: 2, max: 24 })
        .chain((n) =>
          fc.tuple(
            fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }),
            fc.subarray([...Array(n).keys()]),
          ),
        ),
      async ([order, rewritten]) => {
        const n = order.length;
        const rkey = TID.nextStr();
        const uri = `at://${DID}/click.aligned.chat.session/${rkey}`;
        const keys = Array.from({ length: n }, () => TID.nextStr());
        const turn = (i: number, text: string) =>
          indexRecords(db.sql, DID, [
            {
              collection: 'click.aligned.chat.message',
              rkey: keys[i]!,
              cid: CID,
              record: userTurn(uri, text),
            },
          ]);
        await indexRecords(db.sql, DID, [
          {
            collection: 'click.aligned.chat.session',
            rkey,
            cid: CID,
            record: {
              $type: 'click.aligned.chat.session',
              title: 'T',
              createdAt: '2026-11-01T00:00:00.000Z',
            },
          },
        ]);
        for (const i of order) await turn(i, `turn ${i}`);
        for (const i of rewritten) await turn(i, `turn ${i} again`);
        const thread = JSON.parse((await getThreadJson(reader, noNetwork, uri))!) as {
          session: { turns: number };
          messages: { uri: string; record: { text: string } }[];
        };
        const again = new Set(rewritten);
        expect(thread.messages.map((m) => m.record.text)).toEqual(
          keys.map((_, i) => (again.has(i) ? `turn ${i} again` : `turn ${i}`)),
        );
        expect(thread.messages.map((m) => m.uri.split('/').at(-1))).toEqual(keys);
        expect(thread.session.turns).toBe(n);
      },
    ),
    { numRuns: 30 },
  );
}, 120_000);
