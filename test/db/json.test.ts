import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect, type Sql } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// postgres.js re-sends a prepared statement the server no longer has (a migration changed what it returns; a
// pooler or DISCARD dropped it). It serialises the parameters again on the way, and a JSON parameter used to go
// the second time as a JSON string of its own text: the row kept a string, not the object (src/db/client.ts).
let db: TestDatabase;
let one: Sql;
beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
  await db.sql`create table docs (id serial primary key, doc jsonb not null)`;
  // One connection: the statement prepared by the first insert is the one the next insert re-uses.
  one = connect(db.url, { max: 1 });
});
afterAll(async () => {
  await one?.end();
  await db?.drop();
});

const doc = { parts: [{ type: 'text', text: 'Where are the "maps"?' }], n: 1 };
const insert = () => one<{ id: number }[]>`insert into docs (doc) values (${one.json(doc)}) returning *`;
const kinds = async () =>
  (await db.sql<{ kind: string }[]>`select jsonb_typeof(doc) as kind from docs order by id`).map(
    (r) => r.kind,
  );

it('a JSON parameter re-sent after its prepared statement was dropped is stored as the object, not a string', async () => {
  await insert();
  const prepared = await one<{ name: string }[]>`
    select name from pg_prepared_statements where statement like 'insert into docs%'`;
  expect(prepared).toHaveLength(1);
  await one.unsafe(`deallocate all`);
  await insert();
  // The same after a migration changes what the prepared `returning *` gives back (its plan must be made again).
  await db.sql`alter table docs add column note text`;
  const [row] = await insert();
  expect(row).toMatchObject({ doc, note: null });
  expect(await kinds()).toEqual(['object', 'object', 'object']);
  const stored = await db.sql<{ doc: unknown }[]>`select doc from docs order by id`;
  expect(stored.map((r) => r.doc)).toEqual([doc, doc, doc]);
});

it('JSON values of every shape still go as JSON: arrays, nested, numbers and nulls inside', async () => {
  const values = [[1, 'two', null], { a: { b: [true, false] } }, []];
  for (const v of values) {
    const [got] = await one<{ v: unknown }[]>`select ${one.json(v)}::jsonb as v`;
    expect(got!.v).toEqual(v);
  }
});
