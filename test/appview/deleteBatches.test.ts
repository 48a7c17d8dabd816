import { TID } from '@atproto/common-web';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Batcher } from '../../src/appview/batcher.ts';
import type { Op } from '../../src/appview/ops.ts';
import { connect } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// The stream's deletes are applied as its upserts are, a run of them at once (one transaction per author), and
// the index ends exactly as it would have with each event applied alone.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
const SESSION = 'click.aligned.chat.session';
const MESSAGE = 'click.aligned.chat.message';
const CREATED = '2026-11-01T00:00:00.000Z';
let dids = 0;
/** A DID no other case has used (padded with '0', which no number begins with: 'a' made 10 and 330 one DID). */
const freshDid = () => `did:plc:${(++dids).toString(32).padStart(24, '0')}`;
let at = 0;
const quiet = { onError: () => {}, onSkip: () => {} };

/** Keys 0 and 1 are sessions; 2 and 3 turns of session 0 (a turn must be in its own author's session). */
const RKEYS = [TID.nextStr(), TID.nextStr(), TID.nextStr(), TID.nextStr()];
const collectionOf = (key: number) => (key < 2 ? SESSION : MESSAGE);
const uriOf = (did: string, key: number) => `at://${did}/${collectionOf(key)}/${RKEYS[key]}`;
const recordOf = (did: string, key: number, text: string) =>
  key < 2
    ? { $type: SESSION, title: text, createdAt: CREATED }
    : { $type: MESSAGE, session: uriOf(did, 0), role: 'user', text, createdAt: CREATED };

/** One event as generated: whose, which record, and its commit's rev (an index into revs; -1: none given). */
interface Step {
  kind: 'upsert' | 'delete' | 'skip';
  author: 0 | 1;
  key: number;
  rev: number;
}
const step = fc.record({
  kind: fc.constantFrom('upsert' as const, 'delete' as const, 'skip' as const),
  author: fc.constantFrom(0 as const, 1 as const),
  key: fc.integer({ min: 0, max: 3 }),
  // Mostly in order; some older (a replay), some without a rev (Jetstream's events may carry none).
  rev: fc.integer({ min: -1, max: 11 }),
});

function opsOf(steps: Step[], authors: [string, string], revs: string[]): Op[] {
  return steps.map((s, i): Op => {
    const did = authors[s.author];
    const rev = s.rev >= 0 ? { rev: revs[s.rev]! } : {};
    if (s.kind === 'skip') return { kind: 'skip', at: ++at };
    if (s.kind === 'delete') return { kind: 'delete', at: ++at, uri: uriOf(did, s.key), ...rev };
    return {
      kind: 'upsert',
      at: ++at,
      did,
      collection: collectionOf(s.key),
      rkey: RKEYS[s.key]!,
      cid: CID,
      record: recordOf(did, s.key, `version ${i}`),
      // Some without one: Jetstream passes on a commit whose rev is not a TID without it.
      ...rev,
    };
  });
}

/** What the index says of these authors' records, with each author named by its place. */
async function stateOf(authors: [string, string]) {
  const named = (uri: string) => uri.replace(authors[0], 'A').replace(authors[1], 'B');
  const like = authors.map((d) => `at://${d}/%`);
  const rows = await db.sql<{ uri: string; rev: string | null; text: string }[]>`
    select uri, rev, record->>'title' as text from index_sessions where uri like any(${like})
    union all select uri, rev, record->>'text' from index_messages where uri like any(${like})
    order by uri`;
  const tombstones = await db.sql<{ uri: string; rev: string | null }[]>`
    select uri, rev from index_tombstones where uri like any(${like}) order by uri`;
  return {
    rows: rows.map((r) => ({ ...r, uri: named(r.uri) })).sort((a, b) => a.uri.localeCompare(b.uri)),
    tombstones: tombstones
      .map((t) => ({ ...t, uri: named(t.uri) }))
      .sort((a, b) => a.uri.localeCompare(b.uri)),
  };
}

/**
 * `steps` applied to two fresh pairs of authors, after `before` (each its own batch): for one pair in one batch,
 * for the other one batch each. The index must end the same for both.
 */
async function expectBatchedAsAlone(batcher: Batcher, steps: Step[], revs: string[], before: Step[] = []) {
  const together: [string, string] = [freshDid(), freshDid()];
  const alone: [string, string] = [freshDid(), freshDid()];
  for (const authors of [together, alone]) {
    for (const op of opsOf(before, authors, revs)) await batcher.add(op);
    await batcher.flush();
  }
  // Every event in one batch: consecutive deletes go together, as consecutive upserts do.
  for (const op of opsOf(steps, together, revs)) await batcher.add(op);
  await batcher.flush();
  // The same events, one batch each.
  for (const op of opsOf(steps, alone, revs)) {
    await batcher.add(op);
    await batcher.flush();
  }
  expect(await stateOf(together)).toEqual(await stateOf(alone));
}

describe("the stream's deletes, a run at once", () => {
  it('leave the index exactly as the same events applied one at a time would', async () => {
    const batcher = new Batcher(db.sql, 'relay', quiet);
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 24 }), async (steps) => {
        const revs = Array.from({ length: 12 }, () => TID.nextStr());
        await expectBatchedAsAlone(batcher, steps, revs);
      }),
      { numRuns: 60 },
    );
  });

  it("keep of one record's versions in one batch what they would one at a time, with and without revs", async () => {
    // Upserts of one record back to back, so that they meet in one batch: with and without revs, older and newer,
    // a record already stored or not.
    const versions = fc.array(
      fc.record({
        kind: fc.constant('upsert' as const),
        author: fc.constant(0 as const),
        key: fc.constant(0),
        rev: fc.integer({ min: -1, max: 4 }),
      }),
      { minLength: 1, maxLength: 6 },
    );
    const batcher = new Batcher(db.sql, 'relay', quiet);
    await fc.assert(
      fc.asyncProperty(fc.option(fc.integer({ min: 0, max: 5 })), versions, async (stored, steps) => {
        const revs = Array.from({ length: 6 }, () => TID.nextStr());
        const before: Step[] = stored === null ? [] : [{ kind: 'upsert', author: 0, key: 0, rev: stored }];
        await expectBatchedAsAlone(batcher, steps, revs, before);
      }),
      { numRuns: 150 },
    );
  });

  it('remove a record whatever its version when the commit gave no rev, alone or beside an older delete of it', async () => {
    const [did] = [freshDid()];
    const [older, current] = [TID.nextStr(), TID.nextStr()];
    const batcher = new Batcher(db.sql, 'relay', quiet);
    for (const key of [0, 1])
      await batcher.add({
        kind: 'upsert',
        at: ++at,
        did,
        collection: SESSION,
        rkey: RKEYS[key]!,
        cid: CID,
        record: recordOf(did, key, 'kept?'),
        rev: current,
      });
    await batcher.flush();
    // Key 0: a replayed older delete, then one without a rev (Jetstream's); key 1: one without a rev alone.
    await batcher.add({ kind: 'delete', at: ++at, uri: uriOf(did, 0), rev: older });
    await batcher.add({ kind: 'delete', at: ++at, uri: uriOf(did, 0) });
    await batcher.add({ kind: 'delete', at: ++at, uri: uriOf(did, 1) });
    await batcher.flush();
    const { rows, tombstones } = await stateOf([did, freshDid()]);
    expect(rows).toEqual([]);
    expect(tombstones).toEqual([
      { uri: `at://A/${SESSION}/${RKEYS[0]}`, rev: older },
      { uri: `at://A/${SESSION}/${RKEYS[1]}`, rev: null },
    ]);
  });

  it('are one transaction per author: a commit of 200 deletes is not 200 transactions', async () => {
    const statements: string[] = [];
    const counted = connect(db.url, { max: 2, onQuery: (q) => statements.push(q) });
    try {
      const [alice, bob] = [freshDid(), freshDid()];
      const rkeys = Array.from({ length: 200 }, () => TID.nextStr());
      const setup = new Batcher(db.sql, 'relay', quiet);
      for (const did of [alice, bob])
        for (const rkey of rkeys)
          await setup.add({
            kind: 'upsert',
            at: ++at,
            did,
            collection: SESSION,
            rkey,
            cid: CID,
            record: { $type: SESSION, title: rkey, createdAt: CREATED },
            rev: TID.nextStr(),
          });
      await setup.flush();
      const deleting = TID.nextStr();
      const batcher = new Batcher(counted, 'relay', quiet);
      // Alice's commit of 200 deletes, then Bob's, as the stream brings them, with records of other collections
      // (which the index skips) among them.
      for (const did of [alice, bob])
        for (const [i, rkey] of rkeys.entries()) {
          await batcher.add({
            kind: 'delete',
            at: ++at,
            uri: `at://${did}/${SESSION}/${rkey}`,
            rev: deleting,
          });
          if (i % 50 === 0) await batcher.add({ kind: 'skip', at: ++at });
        }
      await batcher.flush();
      expect(statements.filter((q) => /^begin$/i.test(q.trim()))).toHaveLength(2);
      const left =
        await db.sql`select count(*)::int as n from index_sessions where did = any(${[alice, bob]})`;
      expect(left[0]!.n).toBe(0);
      const stones = await db.sql`select count(*)::int as n from index_tombstones
        where uri like any(${[`at://${alice}/%`, `at://${bob}/%`]}) and rev = ${deleting}`;
      expect(stones[0]!.n).toBe(400);
    } finally {
      await counted.end({ timeout: 5 });
    }
  });
});
