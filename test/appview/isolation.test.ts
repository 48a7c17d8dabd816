import { TID } from '@atproto/common-web';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKFILL_LIMITS, backfillActor } from '../../src/appview/backfill.ts';
import { Batcher, databaseAway } from '../../src/appview/batcher.ts';
import type { Network } from '../../src/appview/network.ts';
import type { Op } from '../../src/appview/ops.ts';
import { getThread, listSessions } from '../../src/appview/read.ts';
import { shapeProblem } from '../../src/appview/shape.ts';
import { indexRecords, refusal } from '../../src/appview/store.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { noNetwork } from '../support/records.ts';

// One hostile record cannot stop the index (issue 24): every record is decided — indexed or skipped and
// counted — and the cursor moves past it; deletes win over stale copies; inactive authors are not served.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

const DID = 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa';
const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
const sessionUri = (did: string, rkey: string) => `at://${did}/click.aligned.chat.session/${rkey}`;
const session = (title = 'T') => ({
  $type: 'click.aligned.chat.session',
  title,
  createdAt: '2026-11-01T00:00:00.000Z',
});
const turn = (session: string, text: string) => ({
  $type: 'click.aligned.chat.message',
  session,
  role: 'user',
  text,
  createdAt: '2026-11-01T00:00:00.000Z',
});
const nested = (depth: number): unknown => {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
};
const upsert = (at: number, rkey: string, record: unknown, did = DID, rev?: string): Op => ({
  kind: 'upsert',
  at,
  did,
  collection: (record as { $type?: string })?.$type ?? 'click.aligned.chat.session',
  rkey,
  cid: CID,
  record,
  ...(rev ? { rev } : {}),
});
const indexed = async (uri: string) =>
  (
    await db.sql`select 1 from index_sessions where uri = ${uri} union all
    select 1 from index_messages where uri = ${uri}`
  ).length > 0;
const state = async () =>
  (
    await db.sql<{ cursor: number; skipped: number }[]>`select cursor::int, skipped::int from index_state`
  )[0]!;

/** A hostile record: deep, wide, large, NUL and half surrogates, wrong types, or any JSON at all. */
const hostile = fc.oneof(
  fc.integer({ min: 33, max: 20_000 }).map((d) => ({ ...session(), extra: nested(d) })),
  fc.integer({ min: 60_000, max: 200_000 }).map((n) => ({ ...session(), wide: Array(n).fill(0) })),
  fc.integer({ min: 1_100_000, max: 1_500_000 }).map((n) => ({ ...session(), big: 'x'.repeat(n) })),
  fc
    .constantFrom('0000-01-01T00:00:00.000Z', '+010000-01-01T00:00:00.000Z')
    .map((createdAt) => ({ ...session(), createdAt })),
  fc.constantFrom('\u0000', '\ud800', 'a\udc00b').map((bad) => ({ ...session(bad), [bad]: bad })),
  fc.record({
    $type: fc.constant('click.aligned.chat.session'),
    title: fc.anything(),
    createdAt: fc.anything(),
  }),
  fc.jsonValue({ maxDepth: 6 }),
  fc.anything({ maxDepth: 4 }),
);

describe('the shape is bounded before anything recursive', () => {
  it('never throws and refuses deep, wide and large records, whatever they hold', () => {
    fc.assert(
      fc.property(
        hostile,
        fc.constantFrom('click.aligned.chat.session', 'click.aligned.chat.message'),
        (r, c) => {
          expect(() => refusal(DID, c, r)).not.toThrow();
        },
      ),
      { numRuns: 60 },
    );
    expect(shapeProblem(nested(100_000))).toBe('nested too deeply');
    expect(shapeProblem(Array(1_000_000).fill(1))).toBe('too many values');
    expect(shapeProblem(session())).toBeNull();
    // What the stack used to overflow on: a record nested thousands deep, refused and not thrown.
    expect(refusal(DID, 'click.aligned.chat.session', { ...session(), x: nested(5000) })).toBe(
      'nested too deeply',
    );
  });
});

describe('what the reader decided', () => {
  it('a record its reader refused is skipped for that reason, however it reads', async () => {
    const rkey = TID.nextStr();
    const uri = sessionUri(DID, rkey);
    const skipped: [string, string][] = [];
    const before = (await state()).skipped;
    await indexRecords(
      db.sql,
      DID,
      [
        {
          collection: 'click.aligned.chat.session',
          rkey,
          cid: CID,
          record: session(),
          refused: 'nested too deeply',
        },
      ],
      { onSkip: (u, why) => skipped.push([u, why]) },
    );
    expect(skipped).toEqual([[uri, 'nested too deeply']]);
    expect(await indexed(uri)).toBe(false);
    expect((await state()).skipped).toBe(before + 1);
  });
});

describe('the batcher', () => {
  it('skips and counts each hostile record, moves the cursor past it, and indexes the good ones beside it', async () => {
    const skippedUris: string[] = [];
    const batcher = new Batcher(db.sql, 'relay', {
      onError: () => {},
      onSkip: (uri) => skippedUris.push(uri),
    });
    const before = await state();
    const good: string[] = [];
    let at = (before.cursor ?? 0) + 1;
    const samples = fc.sample(hostile, 40);
    for (const [i, record] of samples.entries()) {
      await batcher.add(upsert(at++, TID.nextStr(), record));
      if (i % 8 === 0) {
        const rkey = TID.nextStr();
        good.push(sessionUri(DID, rkey));
        await batcher.add(upsert(at++, rkey, session(`good ${i}`)));
      }
    }
    await batcher.flush();
    for (const uri of good) expect(await indexed(uri)).toBe(true);
    const after = await state();
    expect(after.cursor).toBe(at - 1);
    expect(after.skipped - before.skipped).toBe(skippedUris.length);
    expect(skippedUris.length).toBeGreaterThanOrEqual(samples.length - 10);
  });

  it('an error with no SQLSTATE (a record that throws as it is written) splits the batch: only that op is skipped', async () => {
    const skipped: string[] = [];
    const errors: unknown[] = [];
    const batcher = new Batcher(db.sql, 'relay', {
      onError: (e) => errors.push(e),
      onSkip: (uri, why) => skipped.push(`${uri} ${why}`),
    });
    // A value no network record can be, standing for any exception of our own nobody foresaw.
    // Not enumerable: the lexicon check reads the record's fields and passes it; writing it as JSON throws.
    const throwing = Object.defineProperty({ ...session() }, 'toJSON', {
      enumerable: false,
      value: () => {
        throw new TypeError('boom');
      },
    });
    const bad = TID.nextStr();
    const good = [TID.nextStr(), TID.nextStr()];
    const { cursor } = await state();
    await batcher.add(upsert(cursor + 1, good[0]!, session()));
    await batcher.add(upsert(cursor + 2, bad, throwing));
    await batcher.add(upsert(cursor + 3, good[1]!, session()));
    await batcher.flush();
    expect(errors.length).toBeGreaterThan(0); // the fault fired: the whole batch failed first
    expect(skipped).toEqual([expect.stringContaining(`${sessionUri(DID, bad)} TypeError: boom`)]);
    expect(await indexed(sessionUri(DID, good[0]!))).toBe(true);
    expect(await indexed(sessionUri(DID, good[1]!))).toBe(true);
    expect((await state()).cursor).toBe(cursor + 3);
  });

  it('tells the database being away from a refused record', () => {
    expect(databaseAway({ code: 'CONNECTION_CLOSED' })).toBe(true);
    expect(databaseAway({ code: 'ECONNREFUSED' })).toBe(true);
    expect(databaseAway({ code: '57P01' })).toBe(true);
    expect(databaseAway({ code: '53100' })).toBe(true);
    expect(databaseAway({ code: '22P02' })).toBe(false);
    expect(databaseAway(new RangeError('Maximum call stack size exceeded'))).toBe(false);
    expect(databaseAway(null)).toBe(false);
  });
});

/** A Network whose repo holds `records` and answers a listRecords page only once `gate` opens. */
function heldNetwork(did: string, records: { uri: string; value: unknown }[], gate: Promise<void>) {
  let read!: () => void;
  const readPage = new Promise<void>((r) => {
    read = r;
  });
  const network = {
    identity: async () => ({ did, handle: null, pds: 'http://127.0.0.1:1' }),
    async *listRecords(_pds: string, _did: string, collection: string) {
      const page = records.filter((r) => r.uri.includes(`/${collection}/`));
      read(); // the page has been read from the repo…
      await gate; // …and is written only after the test's delete
      for (const r of page) yield { uri: r.uri, cid: CID, value: r.value };
    },
  } as unknown as Network;
  return { network, readPage };
}

describe('deletes win', () => {
  it('a backfill that read the repo before a delete does not bring the record back', async () => {
    const did = 'did:plc:bbbbbbbbbbbbbbbbbbbbbbbb';
    const rkey = TID.nextStr();
    const uri = sessionUri(did, rkey);
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const { network, readPage } = heldNetwork(did, [{ uri, value: session('stale') }], gate);
    const running = backfillActor(db.sql, network, did, { waitMs: 10_000 });
    await readPage;
    // The author deletes it: the stream's delete lands while the backfill holds its stale page.
    const batcher = new Batcher(db.sql, 'relay', { onError: () => {}, onSkip: () => {} });
    await batcher.add({ kind: 'delete', at: (await state()).cursor + 1, uri, rev: TID.nextStr() });
    await batcher.flush();
    open();
    expect(await running).toBe(true);
    expect(await indexed(uri)).toBe(false);
  });

  it("a backfill's stale copy does not replace a newer version the stream delivered meanwhile", async () => {
    const did = 'did:plc:cccccccccccccccccccccccc';
    const rkey = TID.nextStr();
    const uri = sessionUri(did, rkey);
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const { network, readPage } = heldNetwork(did, [{ uri, value: session('old title') }], gate);
    const running = backfillActor(db.sql, network, did, { waitMs: 10_000 });
    await readPage;
    await indexRecords(db.sql, null, [
      {
        did,
        collection: 'click.aligned.chat.session',
        rkey,
        cid: CID,
        record: session('new title'),
        rev: TID.nextStr(),
      },
    ]);
    open();
    await running;
    const [row] = await db.sql`select record->>'title' as title from index_sessions where uri = ${uri}`;
    expect(row?.title).toBe('new title');
  });

  it('an event older than a delete (a replay) does not bring the record back; a later re-create does', async () => {
    const rkey = TID.nextStr();
    const uri = sessionUri(DID, rkey);
    const [r1, r2, r3] = [TID.nextStr(), TID.nextStr(), TID.nextStr()];
    const batcher = new Batcher(db.sql, 'relay', { onError: () => {}, onSkip: () => {} });
    const at = (await state()).cursor;
    await batcher.add({ kind: 'delete', at: at + 1, uri, rev: r2 });
    await batcher.add(upsert(at + 2, rkey, session('replayed'), DID, r1));
    await batcher.flush();
    expect(await indexed(uri)).toBe(false);
    await batcher.add(upsert(at + 3, rkey, session('made again'), DID, r3));
    await batcher.flush();
    expect(await indexed(uri)).toBe(true);
  });
});

describe('what the review of the first version found', () => {
  it('an account taken down is not read back by a backfill, even one running as the purge lands', async () => {
    const did = 'did:plc:iiiiiiiiiiiiiiiiiiiiiiii';
    const rkey = TID.nextStr();
    const uri = sessionUri(did, rkey);
    await indexRecords(db.sql, did, [
      { collection: 'click.aligned.chat.session', rkey, cid: CID, record: session() },
    ]);
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const { network, readPage } = heldNetwork(did, [{ uri, value: session('read back') }], gate);
    const running = backfillActor(db.sql, network, did, {
      waitMs: 10_000,
      limits: { ...BACKFILL_LIMITS, cooldownMs: 0 },
    });
    await readPage;
    const batcher = new Batcher(db.sql, 'relay', { onError: () => {}, onSkip: () => {} });
    await batcher.add({ kind: 'purge', at: (await state()).cursor + 1, did, status: 'takendown' });
    await batcher.flush();
    open();
    await running;
    expect(await indexed(uri)).toBe(false);
    // And a backfill asked for later does not read it at all.
    const again = heldNetwork(did, [{ uri, value: session('read back') }], Promise.resolve());
    expect(
      await backfillActor(db.sql, again.network, did, {
        waitMs: 10_000,
        limits: { ...BACKFILL_LIMITS, cooldownMs: 0 },
      }),
    ).toBe(true);
    expect(await indexed(uri)).toBe(false);
    expect(await getThread(db.sql, noNetwork, uri)).toBeNull();
  });

  it('our own write-through after an unpublish (same session rkey) is indexed at once', async () => {
    const rkey = TID.nextStr();
    const uri = sessionUri(DID, rkey);
    const { removeRecord } = await import('../../src/appview/store.ts');
    // The unpublish's delete, as the stream delivered it (with its commit's rev).
    await removeRecord(db.sql, uri, TID.nextStr());
    await indexRecords(
      db.sql,
      DID,
      [{ collection: 'click.aligned.chat.session', rkey, cid: CID, record: session('again') }],
      {
        written: true,
      },
    );
    expect(await indexed(uri)).toBe(true);
  });

  it('a write-through of a version older than a delete made since does not bring it back', async () => {
    // A turn published earlier (rev `published`), deleted since with another client (the stream's delete, at
    // `deleted`), then indexed again by a later publish's write-through with the rev it was written at.
    const rkey = TID.nextStr();
    const uri = sessionUri(DID, rkey);
    const [published, deleted, republished] = [TID.nextStr(), TID.nextStr(), TID.nextStr()];
    const { removeRecord } = await import('../../src/appview/store.ts');
    await removeRecord(db.sql, uri, deleted);
    const write = (rev: string) =>
      indexRecords(
        db.sql,
        DID,
        [{ collection: 'click.aligned.chat.session', rkey, cid: CID, record: session('old'), rev }],
        { written: true },
      );
    await write(published);
    expect(await indexed(uri)).toBe(false);
    expect(await db.sql`select 1 from index_tombstones where uri = ${uri}`).toHaveLength(1);
    // Written again after the delete (published anew): newer than the delete, so it is shown.
    await write(republished);
    expect(await indexed(uri)).toBe(true);
    expect(await db.sql`select 1 from index_tombstones where uri = ${uri}`).toHaveLength(0);
  });

  it('a refused older version (a replay) does not take a newer valid one out', async () => {
    const rkey = TID.nextStr();
    const uri = sessionUri(DID, rkey);
    const [older, newer] = [TID.nextStr(), TID.nextStr()];
    await indexRecords(db.sql, null, [
      {
        did: DID,
        collection: 'click.aligned.chat.session',
        rkey,
        cid: CID,
        record: session('new'),
        rev: newer,
      },
    ]);
    await indexRecords(db.sql, null, [
      {
        did: DID,
        collection: 'click.aligned.chat.session',
        rkey,
        cid: CID,
        record: { nonsense: true },
        rev: older,
      },
    ]);
    expect(await indexed(uri)).toBe(true);
  });
});

describe('account status', () => {
  it('an author whose account is not active is served to no one until it is active again', async () => {
    const did = 'did:plc:dddddddddddddddddddddddd';
    const rkey = TID.nextStr();
    const uri = sessionUri(did, rkey);
    await indexRecords(db.sql, did, [
      { collection: 'click.aligned.chat.session', rkey, cid: CID, record: session('Visible') },
      { collection: 'click.aligned.chat.message', rkey: TID.nextStr(), cid: CID, record: turn(uri, 'hello') },
    ]);
    const listed = async () =>
      (await listSessions(db.sql, noNetwork, { limit: 100 })).sessions.some((s) => s.uri === uri);
    expect(await listed()).toBe(true);
    expect((await getThread(db.sql, noNetwork, uri))?.messages).toHaveLength(1);
    const batcher = new Batcher(db.sql, 'relay', { onError: () => {}, onSkip: () => {} });
    for (const status of ['deactivated', 'suspended', 'desynchronized', 'throttled', undefined]) {
      const { cursor } = await state();
      const op: Op =
        status === undefined
          ? { kind: 'status', at: cursor + 1, did, status: 'inactive' }
          : { kind: 'status', at: cursor + 1, did, status };
      await batcher.add(op);
      await batcher.flush();
      expect(await listed()).toBe(false);
      expect(await getThread(db.sql, noNetwork, uri)).toBeNull();
      expect((await listSessions(db.sql, noNetwork, { limit: 100, did })).sessions).toHaveLength(0);
      await batcher.add({ kind: 'status', at: cursor + 2, did, status: null });
      await batcher.flush();
      expect(await listed()).toBe(true);
    }
  });
});

describe('backfill bounds', () => {
  it("everyone's list never shows what only a backfill vouches for, and backfills are bounded in total", async () => {
    const limits = { ...BACKFILL_LIMITS, totalRecords: 25, cooldownMs: 0 };
    const authors = ['eeeeeeeeeeeeeeeeeeeeeeee', 'ffffffffffffffffffffffff', 'gggggggggggggggggggggggg'].map(
      (s) => `did:plc:${s}`,
    );
    const uris: string[] = [];
    for (const did of authors) {
      const rkey = TID.nextStr();
      const uri = sessionUri(did, rkey);
      uris.push(uri);
      const records = [
        { uri, value: session(`by ${did}`) },
        ...Array.from({ length: 9 }, () => ({
          uri: `at://${did}/click.aligned.chat.message/${TID.nextStr()}`,
          value: turn(uri, 'hi'),
        })),
      ];
      const { network } = heldNetwork(did, records, Promise.resolve());
      expect(await backfillActor(db.sql, network, did, { waitMs: 10_000, limits: limits })).toBe(true);
      // Served when asked for by name…
      expect((await getThread(db.sql, noNetwork, uri))?.messages).toHaveLength(9);
      // …but not listed for everyone.
      const all = await listSessions(db.sql, noNetwork, { limit: 100 });
      expect(all.sessions.map((s) => s.uri)).not.toContain(uri);
      await new Promise((r) => setTimeout(r, 5)); // distinct write times
    }
    // 30 rows against a budget of 25: the author read first is let go; the others stay.
    expect(await indexed(uris[0]!)).toBe(false);
    expect(await indexed(uris[1]!)).toBe(true);
    expect(await indexed(uris[2]!)).toBe(true);
    // Once the network's stream delivers a record, it is the index proper: listed, and no longer counted.
    const rkey = uris[2]!.split('/').pop()!;
    await indexRecords(db.sql, authors[2]!, [
      { collection: 'click.aligned.chat.session', rkey, cid: CID, record: session('via the stream') },
    ]);
    const all = await listSessions(db.sql, noNetwork, { limit: 100 });
    expect(all.sessions.map((s) => s.uri)).toContain(uris[2]);
  });

  it('getThread serves only a handle verified within the day', async () => {
    const did = 'did:plc:hhhhhhhhhhhhhhhhhhhhhhhh';
    const rkey = TID.nextStr();
    const uri = sessionUri(did, rkey);
    await indexRecords(db.sql, did, [
      { collection: 'click.aligned.chat.session', rkey, cid: CID, record: session() },
    ]);
    await db.sql`update index_actors set handle = 'stale.example', verified_at = now() - interval '2 days' where did = ${did}`;
    const thread = await getThread(db.sql, noNetwork, uri);
    expect(thread?.session.author).toEqual({ did });
  });
});
