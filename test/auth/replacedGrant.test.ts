import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REPLACED_WAITS_MS, restoreSession } from '../../src/auth/restore.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type Browser, openBrowser, signInThroughPds } from '../support/browser.ts';
import { freePort } from '../support/ports.ts';

// A sign-in on a second device replaces the Player's one grant: the OAuth client revokes the old one, deletes it,
// and stores the new one a round trip later. A request of the first device that looks in between must neither
// fail nor end the Player's web sessions (it used to do both: "deleted by another process" read as an ending).
let app: TestApp;
let browser: Browser;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'av-replaced-'));
  app = await startTestApp(
    {},
    {
      ATPROTO_NETWORK: 'local',
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
      LOCALNET_PDS_PORT: String(await freePort()),
      LOCALNET_PLC_PORT: String(await freePort()),
    },
  );
  browser = await openBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await rm(dataDir, { recursive: true, force: true });
});

const webSessions = async (did: string) =>
  Number(
    (
      await app.db.sql`select count(*)::int as n from sessions
      where player_id in (select id from players where did = ${did})`
    )[0]!.n,
  );

it('a request landing while another device replaces the grant waits for the new one, and signs no one out', async () => {
  const alice = app.running.localnet!.accounts.find((a) => a.handle === 'alice.test')!;
  await signInThroughPds(browser.page, app.url, alice.handle, alice.password);
  await browser.page.waitForURL(`${app.url}/`);
  await browser.page.waitForLoadState('networkidle');
  const cookie = `av_session=${(await browser.context.cookies(app.url)).find((c) => c.name === 'av_session')!.value}`;
  expect(await webSessions(alice.did)).toBe(1);
  const [grant] = await app.db.sql`select value from oauth_sessions where did = ${alice.did}`;

  // The other device's callback, between its delete and its store: the grant is gone for 300 ms.
  await app.db.sql`delete from oauth_sessions where did = ${alice.did}`;
  const stored = new Promise<void>((resolve) =>
    setTimeout(async () => {
      await app.db.sql`insert into oauth_sessions (did, value) values (${alice.did}, ${grant!.value})`;
      resolve();
    }, 300),
  );
  const restored = await restoreSession(app.running.oauth, alice.did, 'continue');
  await stored;
  expect(restored.did).toBe(alice.did);
  expect(await webSessions(alice.did)).toBe(1);
  expect((await app.api('/api/me', { cookie })).status).toBe(200);

  // Gone for good (no new grant comes): the restore says the sign-in ended once it has waited, and ends no web
  // session on its own: whoever took the grant away decided that (a sign-out everywhere already did).
  await app.db.sql`delete from oauth_sessions where did = ${alice.did}`;
  const t0 = Date.now();
  await expect(restoreSession(app.running.oauth, alice.did, 'continue')).rejects.toMatchObject({
    code: 'SESSION_ENDED',
  });
  expect(Date.now() - t0).toBeGreaterThanOrEqual(REPLACED_WAITS_MS.reduce((a, b) => a + b, 0));
  expect(await webSessions(alice.did)).toBe(1);
}, 120_000);
