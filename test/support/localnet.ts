import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../../src/log/index.ts';
import { startTestApp, type TestApp } from './app.ts';
import { type Browser, openBrowser, signInThroughPds } from './browser.ts';
import { freePort } from './ports.ts';

export interface LocalApp {
  app: TestApp;
  browser: Browser;
  /** Signs a demo account in through the real OAuth pages; returns its cookie header and DID. */
  signInAs(handle: string): Promise<{ cookie: string; did: string; playerId: string }>;
  close(): Promise<void>;
}

/**
 * The app in offline mode (its own PLC + PDS on free ports), its data in a folder of its own that `close` removes.
 * `env`: more of the server's settings (environment names).
 */
export async function startOfflineApp(
  env: Record<string, string> = {},
  options: { oauthFetch?: typeof fetch; adminDatabaseUrl?: string; logger?: Logger } = {},
): Promise<TestApp> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'av-localnet-'));
  const app = await startTestApp(
    {},
    {
      ATPROTO_NETWORK: 'local',
      DATA_DIR: dataDir,
      LOCALNET_PDS_PORT: String(await freePort()),
      LOCALNET_PLC_PORT: String(await freePort()),
      ...env,
    },
    options,
  );
  return {
    ...app,
    async close() {
      await app.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The app in offline mode (its own PLC + PDS), a browser, and OAuth sign-in for demo accounts. */
export async function startLocalApp(
  options: {
    oauthFetch?: typeof fetch;
    adminDatabaseUrl?: string;
    /** More of the server's settings (environment names). */
    env?: Record<string, string>;
    /** The server's logger (silent unless given). */
    logger?: Logger;
  } = {},
): Promise<LocalApp> {
  const { env, ...rest } = options;
  const app = await startOfflineApp(env, rest);
  const browser = await openBrowser();
  return {
    app,
    browser,
    async signInAs(handle) {
      const account = app.running.localnet!.accounts.find((a) => a.handle === handle)!;
      await signInThroughPds(browser.page, app.url, account.handle, account.password);
      await browser.page.waitForURL(`${app.url}/`);
      const token = (await browser.context.cookies(app.url)).find((c) => c.name === 'av_session')!.value;
      const [player] = await app.db.sql`select id from players where did = ${account.did}`;
      return { cookie: `av_session=${token}`, did: account.did, playerId: player!.id as string };
    },
    async close() {
      await browser.close();
      await app.close();
    },
  };
}
