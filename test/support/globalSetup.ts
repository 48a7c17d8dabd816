import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { build } from 'vite';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/db/index.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
  }
}

/**
 * One PostgreSQL server for the whole run: the machine's (TEST_DATABASE_URL, as CI sets) or a real embedded
 * one in a temporary directory. Each test file then makes its own database on it (see db.ts).
 */
export default async function setup(project: TestProject) {
  // The browser suites load the built web app, as production serves it.
  await build({
    configFile: path.resolve(import.meta.dirname, '../../client/vite.config.ts'),
    logLevel: 'warn',
  });
  const given = process.env.TEST_DATABASE_URL;
  if (given) {
    project.provide('adminDatabaseUrl', given);
    return;
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'av-test-pg-'));
  const { chmod } = await import('node:fs/promises');
  await chmod(dir, 0o755);
  const pg = await startEmbeddedPostgres(path.join(dir, 'data'));
  project.provide('adminDatabaseUrl', pg.url);
  return async () => {
    await pg.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
