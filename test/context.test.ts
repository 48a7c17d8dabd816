import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { fromConfig } from '../src/context.ts';
import { createLogger } from '../src/log/index.ts';
import { serve } from '../src/server.ts';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { freePort } from './support/ports.ts';

const silent = createLogger({ level: 'silent' });
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

const configFor = (port: number) =>
  loadConfig({ PORT: String(port), DATABASE_URL: db.url, ATPROTO_NETWORK: 'public', LOG_LEVEL: 'silent' });

/** Connections to the test database other than the test's own. */
const others = async () =>
  Number(
    (
      await db.sql<{ n: string }[]>`
        select count(*) as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
    )[0]?.n,
  );

const listens = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });

it('the context is built with the socket bound and the URL known; the app answers once served; close frees everything', async () => {
  const port = await freePort();
  const before = await others();
  const ctx = await fromConfig(configFor(port), silent);
  // Bound before the OAuth client was made, so its URL is this port's; no app yet: not ready.
  expect(ctx.baseUrl).toBe(`http://127.0.0.1:${port}`);
  expect(ctx.oauth.clientMetadata.client_id).toContain(`127.0.0.1%3A${port}`);
  expect(ctx.network).toMatchObject({ kind: 'public', local: false, plcUrl: ctx.config.atproto.plcUrl });
  expect((await fetch(`${ctx.listenUrl}/healthz`)).status).toBe(503);

  const running = await serve(ctx);
  expect((await fetch(`${running.listenUrl}/readyz`)).status).toBe(200);
  await running.close();
  expect(ctx.state.draining).toBe(true);
  expect(await listens(port)).toBe(true);
  expect(await others()).toBe(before);
});

it('a step that fails closes the steps before it: the socket and the database connections', async () => {
  const port = await freePort();
  const before = await others();
  // A private key that is no key: the OAuth client, made after the socket is bound, refuses it.
  const config = configFor(port);
  config.atproto.privateKeys = [{ kty: 'EC', crv: 'P-256', kid: 'broken' }];
  await expect(fromConfig(config, silent)).rejects.toThrow();
  expect(await listens(port)).toBe(true);
  expect(await others()).toBe(before);
});
