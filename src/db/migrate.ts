import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { type Sql, transaction } from './client.ts';
import { LOCKS } from './locks.ts';

export const MIGRATIONS_DIR = path.resolve(import.meta.dirname, '../../migrations');

/** Arbitrary but fixed: the advisory lock key every server takes to apply migrations. */
const MIGRATION_LOCK = LOCKS.migrations;

/**
 * Applies every forward-only SQL file in `migrations/` not yet applied, in name order, in one transaction under
 * an advisory lock: two servers starting together apply each file exactly once.
 */
export async function migrate(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_[a-z0-9_]+\.sql$/.test(f)).sort();
  return transaction(sql, async (tx) => {
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx`create table if not exists schema_migrations (
      name text primary key,
      applied_at timestamptz not null default now()
    )`;
    const rows = await tx<{ name: string }[]>`select name from schema_migrations`;
    const applied = new Set(rows.map((r) => r.name));
    const ran: string[] = [];
    for (const file of files) {
      if (applied.has(file)) continue;
      await tx.unsafe(await readFile(path.join(dir, file), 'utf8'));
      await tx`insert into schema_migrations (name) values (${file})`;
      ran.push(file);
    }
    return ran;
  });
}
