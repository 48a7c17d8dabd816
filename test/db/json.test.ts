import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect, type Sql } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// postgres.js re-sends a prepared statement the server no longer has (a migration changed what it returns; a
// pooler or DISCARD dropped it). It serialises the parameters again on the way (porsager/postgres#1197): a JSON
// parameter went the second time as a JSON string of its own text, `true` as false, bytes as the hex of their hex.
// src/db/client.ts makes those serialisers idempotent (ADR 0073).
let db: TestDatabase;
let one: Sql;
beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
  await db.sql`create table docs (id serial primary key, doc jsonb not null, live boolean not null,
    bytes bytea not null)`;
  // One connection: the statement prepared by the first insert is the one the next insert re-uses.
  one = connect(db.url, { max: 1 });
});
afterAll(async () => {
  await one?.end();
  await db?.drop();
});

const doc = { parts: [{ type: 'text', text: 'Where are the "maps"?' }], n: 1 };
const bytes = Buffer.from([0, 1, 2, 0xfe, 0xff]);
const insert = () => one<{ id: number }[]>`insert into docs (doc, live, bytes)
  values (${one.json(doc)}, ${true}, ${bytes}) returning *`;
const stored = () =>
  db.sql<{ kind: string; doc: unknown; live: boolean; bytes: Buffer }[]>`
    select jsonb_typeof(doc) as kind, doc, live, bytes from docs order by id`;

it('parameters re-sent after their prepared statement was dropped are stored as given: the object, true, the bytes', async () => {
  await insert();
  const prepared = await one<{ name: string }[]>`
    select name from pg_prepared_statements where statement like 'insert into docs%'`;
  expect(prepared).toHaveLength(1);
  await one.unsafe(`deallocate all`);
  await insert();
  // The same after a migration changes what the prepared `returning *` gives back (its plan must be made again).
  await db.sql`alter table docs add column note text`;
  const [row] = await insert();
  expect(row).toMatchObject({ doc, live: true, bytes, note: null });
  const rows = await stored();
  expect(rows.map((r) => r.kind)).toEqual(['object', 'object', 'object']);
  expect(rows.map((r) => r.doc)).toEqual([doc, doc, doc]);
  expect(rows.map((r) => r.live)).toEqual([true, true, true]);
  expect(rows.map((r) => Buffer.from(r.bytes).toString('hex'))).toEqual(Array(3).fill('000102feff'));
});

it('values of every shape still go as they are: JSON nested, booleans both ways, empty bytes; JSON text as JSON', async () => {
  const values = [[1, 'two', null], { a: { b: [true, false] } }, [], { n: 1.5, s: 'quote " and \\' }];
  for (const v of values) {
    const [got] = await one<{ v: unknown }[]>`select ${one.json(v)}::jsonb as v`;
    expect(got!.v).toEqual(v);
  }
  // A string given as JSON is JSON text (the serialiser cannot tell it from one already made).
  const [text] = await one<
    { v: unknown }[]
  >`select ${one.json(JSON.stringify({ a: 1 }) as never)}::jsonb as v`;
  expect(text!.v).toEqual({ a: 1 });
  const [flags] = await one<
    { t: boolean; f: boolean }[]
  >`select ${true}::boolean as t, ${false}::boolean as f`;
  expect(flags).toEqual({ t: true, f: false });
  const [empty] = await one<{ b: Buffer }[]>`select ${Buffer.alloc(0)}::bytea as b`;
  expect(Buffer.from(empty!.b).length).toBe(0);
});
