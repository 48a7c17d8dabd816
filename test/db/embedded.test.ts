import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { connect, startEmbeddedPostgres } from '../../src/db/index.ts';
import { createLogger } from '../../src/log/index.ts';
import { start } from '../../src/server.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'av-embedded-'));
  await chmod(dir, 0o755);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

it('starts a real embedded PostgreSQL when DATABASE_URL is unset, and keeps its data across restarts', async () => {
  const config = {
    ...loadConfig({ PORT: '0', DATA_DIR: dir, ATPROTO_NETWORK: 'public' }),
    databaseUrl: undefined,
  };
  const first = await start(config, createLogger({ level: 'silent' }));
  try {
    const [v] = await first.sql<{ v: string }[]>`select current_setting('server_version') as v`;
    expect(v?.v).toMatch(/^\d+/);
    await first.sql`insert into players (did) values ('did:plc:kept')`;
  } finally {
    await first.close();
  }
  const second = await start(config, createLogger({ level: 'silent' }));
  try {
    const rows = await second.sql`select did from players`;
    expect(rows.map((r) => r.did)).toEqual(['did:plc:kept']);
    const health = await fetch(`${second.url}/healthz`);
    expect(health.status).toBe(200);
  } finally {
    await second.close();
  }
}, 60_000);

// As root, PostgreSQL runs as the system user "postgres": a clone in a folder only root may enter (root's
// home, mode 700) must still start, with the binaries and data kept where that user can reach them.
it.runIf(process.getuid?.() === 0)(
  'as root, starts from a clone in a folder only root can enter, and keeps its data across restarts',
  async () => {
    const home = path.join(dir, 'pg-home');
    const privateClone = path.join(dir, 'root-only');
    await mkdir(privateClone, { mode: 0o700 });
    process.env.EMBEDDED_PG_HOME = home;
    try {
      const first = await startEmbeddedPostgres(path.join(privateClone, 'data/postgres'));
      expect(first.dataDir.startsWith(home)).toBe(true);
      const sql = connect(first.url);
      await sql`create table kept (v text)`;
      await sql`insert into kept values ('still here')`;
      await sql.end();
      await first.stop();
      const second = await startEmbeddedPostgres(path.join(privateClone, 'data/postgres'));
      const again = connect(second.url);
      expect((await again`select v from kept`).map((r) => r.v)).toEqual(['still here']);
      await again.end();
      await second.stop();
    } finally {
      delete process.env.EMBEDDED_PG_HOME;
    }
  },
  120_000,
);
