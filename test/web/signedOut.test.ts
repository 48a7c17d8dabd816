import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type Browser, openBrowser, shoot, signInThroughPds } from '../support/browser.ts';
import { freePort } from '../support/ports.ts';
import { setupConversation } from '../support/turns.ts';

let app: TestApp;
let browser: Browser;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'av-signedout-'));
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

const account = (handle: string) => app.running.localnet!.accounts.find((a) => a.handle === handle)!;

it('when the session ends, the page says so once with a Sign in button, and signing in returns to the same Conversation with the words typed', async () => {
  const alice = account('alice.test');
  const { page, context } = browser;
  await signInThroughPds(page, app.url, alice.handle, alice.password);
  await page.waitForURL(`${app.url}/`);
  const token = (await context.cookies(app.url)).find((c) => c.name === 'av_session')!.value;
  const { conversationId } = await setupConversation(app, `av_session=${token}`);
  await page.goto(`${app.url}/c/${conversationId}?at=nowhere#end`);
  await page.getByLabel('Message').waitFor();

  // The words are typed; then the session ends on the server (signed out elsewhere, expired): the next call
  // answers 401. (Typed after, the fill could meet a composer a background call's 401 had already replaced.)
  await page.getByLabel('Message').fill('Where are the maps?');
  await app.db.sql`delete from sessions`;
  // A background call (the live stream's reconnect, a poll) may meet the 401 first and replace the app
  // before Enter lands; either way the notice must show and the draft survive, so the key goes to
  // whatever has focus instead of waiting on a composer that may be gone.
  await page.keyboard.press('Enter');
  const notice = page.getByRole('alert');
  await notice.waitFor();
  // Once, in place of the app: no sidebar still naming the Player, no second copy, no raw API sentence.
  expect(await notice.count()).toBe(1);
  expect(await notice.textContent()).toBe(
    'You have been signed out: your session here has ended. Sign in again to go on where you were.',
  );
  expect(await page.getByText('Sign in to continue.').count()).toBe(0);
  expect(await page.locator('.who').count()).toBe(0);
  expect(await page.title()).toBe('Signed out · AgentsVille');
  // The way back is one button: the handle is already in the box.
  expect(await page.getByLabel('Your handle').inputValue()).toBe('alice.test');
  await shoot(page, 'signed-out');

  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(/\/oauth\/authorize/);
  const password = page.locator('input[name=password]');
  const authorize = page.getByRole('button', { name: 'Authorize', exact: true });
  await Promise.race([password.waitFor({ timeout: 15_000 }), authorize.waitFor({ timeout: 15_000 })]);
  if (await password.isVisible()) {
    await password.fill(alice.password);
    await page.locator('button[type=submit]').click();
  }
  await authorize.click();
  // Back where the Player was, signed in, with what they had typed still in the box.
  await page.waitForURL(`${app.url}/c/${conversationId}?at=nowhere#end`);
  await expect.poll(() => page.locator('.who').textContent()).toContain('@alice.test');
  expect(await page.getByLabel('Message').inputValue()).toBe('Where are the maps?');
}, 120_000);

it('a return path is followed only when it is a path on this site', async () => {
  const login = (returnTo: string) =>
    app.api('/api/auth/login', { body: { identifier: 'alice.test', returnTo } });
  for (const bad of [
    '//evil.example/c/1',
    '/\\evil.example',
    'https://evil.example/',
    'javascript:alert(1)',
    '/c/1\r\nSet-Cookie: x=1',
    '/api/me',
    '/oauth/callback?code=x',
    `/${'a'.repeat(2001)}`,
  ]) {
    const res = await login(bad);
    expect(res.status, bad).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('INVALID_BODY');
  }
  expect((await login('/c/2?at=3#x')).status).toBe(200);
}, 60_000);
