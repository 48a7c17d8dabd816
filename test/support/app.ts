import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createSession, upsertPlayer } from '../../src/auth/index.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import { createLogger, type Logger } from '../../src/log/index.ts';
import type { Resolve } from '../../src/outbound/index.ts';
import { type Running, start } from '../../src/server.ts';
import { createDatabase, type TestDatabase } from './database.ts';
import { type FakeProvider, startFakeProvider } from './fakeProvider.ts';

export interface TestApp {
  url: string;
  running: Running;
  /** Where the server keeps local data (sandboxes). */
  dataDir: string;
  db: TestDatabase;
  fake: FakeProvider;
  /** A signed-in Player: the cookie header to send. */
  signIn(did?: string): Promise<{ cookie: string; playerId: string; did: string }>;
  /** fetch against the app with JSON in and out. */
  api(
    path: string,
    init?: { method?: string; body?: unknown; cookie?: string; headers?: Record<string, string> },
  ): Promise<Response>;
  close(): Promise<void>;
}

let counter = 0;

/** The real server on an ephemeral port, its own database, and a fake Provider named "fake" over HTTP. */
export async function startTestApp(
  overrides: Partial<Config> = {},
  env: NodeJS.ProcessEnv = {},
  options: {
    adminDatabaseUrl?: string;
    onQuery?: (query: string) => void;
    /** Share a database (and fake Provider) with another app, e.g. to restart or run two servers. */
    db?: TestDatabase;
    fake?: FakeProvider;
    oauthFetch?: typeof globalThis.fetch;
    /** How the server's outbound requests resolve hostnames. */
    resolve?: Resolve;
    /** Leave the Village defaults to the server (the demo Model when no key is configured). */
    serverDefaults?: boolean;
    /** The server's logger (silent unless given). */
    logger?: Logger;
    /** The labelers' follower's timings (see StartOptions). */
    labels?: { backoffFirstMs?: number; retryMs?: number };
  } = {},
): Promise<TestApp> {
  // db.ts reads vitest's provided context; benchmarks pass their own server instead.
  const db =
    options.db ??
    (options.adminDatabaseUrl
      ? await createDatabase(options.adminDatabaseUrl)
      : await (await import('./db.ts')).createTestDatabase());
  const fake = options.fake ?? (await startFakeProvider());
  // Sandboxes and other local data go to a folder of this app's own.
  const dataDir = env.DATA_DIR ?? (await mkdtemp(path.join(os.tmpdir(), 'av-data-')));
  const config: Config = {
    ...loadConfig({
      PORT: '0',
      DATABASE_URL: db.url,
      COMPATIBLE_PROVIDERS: JSON.stringify([{ id: 'fake', baseURL: fake.baseURL, apiKey: 'test-key' }]),
      CHECKPOINT_MS: '50',
      DATA_DIR: dataDir,
      ALLOW_PRIVATE_TOOL_URLS: 'true',
      // Suites and benchmarks read the public routes far faster than a person; one test narrows it.
      PUBLIC_REQUESTS_PER_MINUTE: '1000000',
      // Tests change a record and read its state back at once; one test turns the reuse on.
      LOOKUP_CACHE_MS: '0',
      // A title call after each first exchange would be one more request of the fake in every test: the title
      // test turns it on.
      SUMMARISED_TITLES: 'false',
      // No ATProto network unless a test asks for the local one.
      ATPROTO_NETWORK: 'public',
      ...env,
    }),
    ...overrides,
  };
  if (!options.serverDefaults) {
    await db.sql`update village_settings set default_provider = 'fake', default_model = 'fake-model'`;
  }
  const running = await start(config, options.logger ?? createLogger({ level: 'silent' }), {
    onQuery: options.onQuery,
    oauthFetch: options.oauthFetch,
    resolve: options.resolve,
    labels: options.labels,
  });
  const app: TestApp = {
    url: running.url,
    running,
    dataDir,
    db,
    fake,
    async signIn(did = `did:plc:test${++counter}${Date.now().toString(36)}`) {
      const player = await upsertPlayer(db.sql, did, `${did.slice(8)}.test`);
      const token = await createSession(db.sql, player.id);
      return { cookie: `av_session=${token}`, playerId: player.id, did };
    },
    api(path, init = {}) {
      // As the web app does: a change carries JSON or the intent header.
      const headers: Record<string, string> = { 'x-agentsville': '1', ...init.headers };
      if (init.cookie) headers.cookie = init.cookie;
      if (init.body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
      return fetch(`${running.listenUrl}${path}`, {
        method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
        headers,
        body:
          init.body === undefined
            ? undefined
            : typeof init.body === 'string'
              ? init.body
              : JSON.stringify(init.body),
      });
    },
    async close() {
      await running.close();
      if (!options.fake) await fake.close();
      if (!options.db) await db.drop();
      if (!env.DATA_DIR) await rm(dataDir, { recursive: true, force: true });
    },
  };
  return app;
}
