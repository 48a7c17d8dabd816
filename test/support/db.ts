import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { MIGRATIONS_DIR, migrate } from '../../src/db/index.ts';
import { createDatabase, type TestDatabase } from './database.ts';

export type { TestDatabase };

/** A database of its own per test file, so files run in parallel without seeing each other's rows. */
export function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  return createDatabase(inject('adminDatabaseUrl'), options);
}

/**
 * A database of its own migrated up to, not including, the migration whose file name `named` matches: a test of
 * that migration writes rows as they stood before it, then runs `migrate` for the rest. `drop` when done.
 */
export async function createDatabaseBefore(named: (file: string) => boolean): Promise<TestDatabase> {
  const db = await createTestDatabase({ migrate: false });
  const before = await mkdtemp(path.join(os.tmpdir(), 'av-migrations-'));
  try {
    const files = (await readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();
    const mine = files.findIndex(named);
    if (mine <= 0) throw new Error('no such migration, or it is the first');
    for (const f of files.slice(0, mine)) await cp(path.join(MIGRATIONS_DIR, f), path.join(before, f));
    await migrate(db.sql, before);
    return db;
  } catch (e) {
    await db.drop();
    throw e;
  } finally {
    await rm(before, { recursive: true, force: true });
  }
}
