import { inject } from 'vitest';
import { createDatabase, type TestDatabase } from './database.ts';

export type { TestDatabase };

/** A database of its own per test file, so files run in parallel without seeing each other's rows. */
export function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  return createDatabase(inject('adminDatabaseUrl'), options);
}
