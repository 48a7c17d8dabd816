import { randomBytes } from 'node:crypto';
import { connect, migrate, type Sql } from '../../src/db/index.ts';

export interface TestDatabase {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

/** A fresh, migrated database on the given server, dropped afterwards. Used by tests and benchmarks. */
export async function createDatabase(
  adminUrl: string,
  options: { migrate?: boolean } = {},
): Promise<TestDatabase> {
  const name = `av_test_${randomBytes(6).toString('hex')}`;
  const admin = connect(adminUrl, { max: 1 });
  await admin.unsafe(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  // Told apart from the server's own connections (test/db/pool.test.ts counts those).
  const sql = connect(url.toString(), { name: 'agentsville-test' });
  if (options.migrate !== false) await migrate(sql);
  return {
    url: url.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end({ timeout: 5 });
    },
  };
}
