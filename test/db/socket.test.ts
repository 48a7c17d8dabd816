import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect, socketOptions } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// An operator's DATABASE_URL in libpq's Unix-socket form, `postgres://user@/db?host=/dir` (Cloud SQL's and most
// managed hosts'): postgres.js sent `host` to the server as a setting, which refused it ("unrecognized
// configuration parameter host"), and Node's URL refused the empty host before that.
let db: TestDatabase;
let dir: string;
let proxy: net.Server;
let connections = 0;
const PORT = 6543;
beforeAll(async () => {
  db = await createTestDatabase();
  // A socket of our own, passed through to the test database's TCP port: the socket is what is tested, and the
  // database's own sockets (where it has any) may not accept this user.
  dir = await mkdtemp(path.join(os.tmpdir(), 'av-socket-'));
  const target = new URL(db.url);
  proxy = net.createServer((client) => {
    connections++;
    const upstream = net.connect(Number(target.port), target.hostname);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((r) => proxy.listen(path.join(dir, `.s.PGSQL.${PORT}`), r));
});
afterAll(async () => {
  proxy?.close();
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('connects over the Unix socket a libpq-style URL names, port and other settings kept', async () => {
  const target = new URL(db.url);
  const auth = `${target.username}${target.password ? `:${target.password}` : ''}`;
  const url = `postgres://${auth}@${target.pathname}?host=${encodeURIComponent(dir)}&port=${PORT}&application_name=x`;
  const sql = connect(url, { max: 1 });
  try {
    const [row] = await sql<{ db: string; app: string }[]>`
      select current_database() as db, current_setting('application_name') as app`;
    expect(row).toEqual({ db: target.pathname.slice(1), app: 'x' });
    expect(connections).toBeGreaterThan(0);
  } finally {
    await sql.end();
  }
});

it('reads the socket form, and leaves every other URL as it is', () => {
  expect(socketOptions('postgres://u:p@/app?host=/cloudsql/proj:eu:db')).toEqual({
    url: 'postgres://u:p@localhost/app',
    host: '/cloudsql/proj:eu:db',
  });
  expect(socketOptions('postgresql:///app?host=%2Fvar%2Frun%2Fpostgresql&port=5433&sslmode=disable')).toEqual(
    {
      url: 'postgresql://localhost/app?sslmode=disable',
      host: '/var/run/postgresql',
      port: 5433,
    },
  );
  fc.assert(
    fc.property(fc.webUrl({ withQueryParameters: true }), (web) => {
      const url = web.replace(/^https?:/, 'postgres:');
      fc.pre(!new URL(url).searchParams.get('host')?.startsWith('/'));
      expect(socketOptions(url)).toEqual({ url });
    }),
  );
});
