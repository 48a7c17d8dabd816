import type { Config } from '../../src/config.ts';
import { createLogger } from '../../src/log/index.ts';
import { startTestApp, type TestApp } from './app.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { startPgProxy } from './pgProxy.ts';

/**
 * The server on its own database, its pool reaching PostgreSQL through a TCP proxy the test can break (pgProxy.ts),
 * and every line it logs kept in `logged`. `close` lets the proxy through again first, so the server can stop.
 */
export async function startAppBehindProxy(overrides: Partial<Config> = {}) {
  const db: TestDatabase = await createTestDatabase();
  const proxy = await startPgProxy(db.url);
  const logged: string[] = [];
  const app: TestApp = await startTestApp(
    overrides,
    {},
    {
      db: { ...db, url: proxy.url },
      logger: createLogger({ level: 'info', destination: { write: (line: string) => logged.push(line) } }),
    },
  );
  return {
    db,
    proxy,
    app,
    logged,
    async close() {
      proxy.accept();
      await app.close();
      await proxy.close();
      await db.drop();
    },
  };
}
