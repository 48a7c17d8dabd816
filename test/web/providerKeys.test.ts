import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type Browser, openBrowser, shoot } from '../support/browser.ts';

const ADMIN = 'did:plc:webkeyadmin';
const KEY = `sk-web-${randomBytes(10).toString('hex')}4f2a`;
let app: TestApp;
let browser: Browser;
beforeAll(async () => {
  app = await startTestApp({}, { ADMIN_DIDS: ADMIN, SECRETS_KEY: randomBytes(32).toString('hex') });
  const { cookie } = await app.signIn(ADMIN);
  browser = await openBrowser();
  await browser.context.addCookies([
    { name: 'av_session', value: cookie.split('=')[1]!, url: app.url, httpOnly: true, sameSite: 'Lax' },
  ]);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

it('an admin pastes an OpenAI key on the Village page: it is saved, shown by its last four only, and offered', async () => {
  const { page } = browser;
  await page.goto(`${app.url}/village`);
  const row = page.getByRole('form', { name: 'OpenAI key' });
  await row.getByText('Not set.').waitFor();
  const input = row.getByLabel('OpenAI');
  expect(await input.getAttribute('type')).toBe('password');
  await input.fill(KEY);
  await row.getByRole('button', { name: 'Save key' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved the OpenAI key.' }).waitFor();
  await row.getByText('Set here, ends in …4f2a.').waitFor();
  // The box is empty again, and the key is nowhere in the page.
  expect(await input.inputValue()).toBe('');
  expect(await page.content()).not.toContain(KEY.slice(0, -4));
  // The Provider is offered as the Village default at once.
  await expect
    .poll(() => page.getByLabel('Default Provider').locator('option').allTextContents())
    .toContain('openai (openai)');
  await shoot(page, 'village-provider-keys');

  // Remove asks first, then the Provider is gone.
  await row.getByRole('button', { name: 'Remove' }).click();
  await page
    .getByRole('dialog', { name: 'Remove the OpenAI key?' })
    .getByRole('button', { name: 'Remove' })
    .click();
  await row.getByText('Not set.').waitFor();
  const [{ n }] = (await app.db.sql`select count(*)::int as n from provider_keys`) as unknown as [
    { n: number },
  ];
  expect(n).toBe(0);
}, 60_000);
