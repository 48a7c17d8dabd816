import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// #32: each thread's size and version are kept as its turns change (index_thread_totals, by statement triggers),
// so a read checks one row by key instead of counting and summing the thread. Whatever writes the index — one row
// or many in a statement, an upsert that moves a turn to another session, a delete of one, an author's purge —
// the totals equal a recount, and every change to a thread moves its version.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

const DIDS = ['did:plc:aaaa', 'did:plc:bbbb'];
const SESSIONS = ['at://s/1', 'at://s/2', 'at://s/3'];

const Op = fc.oneof(
  fc.record({
    kind: fc.constant('upsert' as const),
    rows: fc.array(
      fc.record({
        n: fc.integer({ min: 0, max: 7 }),
        did: fc.constantFrom(...DIDS),
        session: fc.constantFrom(...SESSIONS),
        size: fc.integer({ min: 0, max: 300 }),
      }),
      { minLength: 1, maxLength: 6 },
    ),
  }),
  fc.record({ kind: fc.constant('delete' as const), n: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('purge' as const), did: fc.constantFrom(...DIDS) }),
);

it('totals equal a recount after any sequence of writes, and each change to a thread moves its version', async () => {
  const sql = db.sql;
  await fc.assert(
    fc.asyncProperty(fc.array(Op, { minLength: 1, maxLength: 12 }), async (ops) => {
      await sql`delete from index_messages`;
      for (const op of ops) {
        const before = await totals();
        if (op.kind === 'upsert') {
          // One statement for the batch, as the indexer writes (last version of a uri wins within it).
          const rows = [...new Map(op.rows.map((r) => [r.n, r])).values()].map((r) => ({
            uri: `at://${r.did}/click.aligned.chat.message/${r.n}`,
            did: r.did,
            rkey: String(r.n),
            session_uri: r.session,
            cid: 'c',
            record: sql.json({}),
            view: 'x'.repeat(r.size),
          }));
          await sql`insert into index_messages ${sql(rows)} on conflict (uri) do update set
            session_uri = excluded.session_uri, view = excluded.view`;
        } else if (op.kind === 'delete') await sql`delete from index_messages where rkey = ${String(op.n)}`;
        else await sql`delete from index_messages where did = ${op.did}`;
        const after = await totals();
        expect([...after.values()].map(({ version: _, ...t }) => t)).toEqual(await recount());
        // A thread whose turns changed has a version it never had before; one untouched keeps its version.
        const touched = await touchedBy(before, after);
        // A turn rewritten in place (same session, same size: the totals alone would not show it) is a change too.
        if (op.kind === 'upsert')
          for (const r of new Map(op.rows.map((r) => [r.n, r])).values())
            touched.add(`${r.session} ${r.did}`);
        for (const [key, t] of after) {
          const was = before.get(key);
          if (touched.has(key)) expect(t.version).not.toBe(was?.version);
          else if (was && was.turns === t.turns && was.bytes === t.bytes) expect(t.version).toBe(was.version);
        }
      }
    }),
    { numRuns: 40 },
  );

  async function totals() {
    const rows = await sql<
      { key: string; session_uri: string; did: string; turns: number; bytes: number; version: string }[]
    >`
      select session_uri || ' ' || did as key, session_uri, did, turns, bytes::int as bytes, version::text as version
      from index_thread_totals order by session_uri, did`;
    return new Map(rows.map(({ key, ...t }) => [key, t]));
  }
  async function recount() {
    return sql`select session_uri, did, count(*)::int as turns, sum(octet_length(view))::int as bytes
      from index_messages group by 1, 2 order by 1, 2`.then((r) => [...r]);
  }
  // Keys whose turns or bytes differ between before and after: the threads the write changed.
  async function touchedBy(before: Map<string, { turns: number; bytes: number }>, after: typeof before) {
    const keys = new Set([...before.keys(), ...after.keys()]);
    return new Set(
      [...keys].filter(
        (k) => before.get(k)?.turns !== after.get(k)?.turns || before.get(k)?.bytes !== after.get(k)?.bytes,
      ),
    );
  }
}, 120_000);
