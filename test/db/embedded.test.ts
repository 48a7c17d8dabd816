import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
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
  const first = await start(config, () => {});
  try {
    const [v] = await first.sql<{ v: string }[]>`select current_setting('server_version') as v`;
    expect(v?.v).toMatch(/^\d+/);
    await first.sql`insert into players (did) values ('did:plc:kept')`;
  } finally {
    await first.close();
  }
  const second = await start(config, () => {});
  try {
    const rows = await second.sql`select did from players`;
    expect(rows.map((r) => r.did)).toEqual(['did:plc:kept']);
    const health = await fetch(`${second.url}/healthz`);
    expect(health.status).toBe(200);
  } finally {
    await second.close();
  }
}, 60_000);
