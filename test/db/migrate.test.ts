import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect, MIGRATIONS_DIR, migrate } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
});
afterAll(() => db?.drop());

it('applies each migration exactly once when two servers start together', async () => {
  const other = connect(db.url);
  try {
    const [a, b] = await Promise.all([migrate(db.sql), migrate(other)]);
    const files = (await readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();
    // One of them applied everything; the other, waiting on the lock, found nothing left to do.
    expect([...a, ...b].sort()).toEqual(files);
    const rows = await db.sql`select name from schema_migrations order by name`;
    expect(rows.map((r) => r.name)).toEqual(files);
    expect(await migrate(db.sql)).toEqual([]);
  } finally {
    await other.end();
  }
});
