import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface Browser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/** Debian's Chromium, headless, in a fresh profile (PLATFORM.md lists the flags this machine needs). */
export async function openBrowser(): Promise<Browser> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'av-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export const OUTPUT_DIR = path.resolve(import.meta.dirname, '../output');

/**
 * Signs in through the local PDS's real OAuth pages: the app's demo button (or handle form), the password,
 * then consent. `decide` picks the consent button ("Authorize" or the refusal).
 */
export async function signInThroughPds(
  page: Page,
  appUrl: string,
  handle: string,
  password: string,
  decide: 'Authorize' | 'Deny access' = 'Authorize',
): Promise<void> {
  await page.context().clearCookies({ name: 'av_session' });
  await page.goto(appUrl);
  await page.getByRole('button', { name: `Sign in as ${handle}` }).click();
  await page.waitForURL(/\/oauth\/authorize/);
  await page.locator('input[name=password]').fill(password);
  await page.locator('button[type=submit]').click();
  const button = page.getByRole('button', { name: decide, exact: true });
  await button.waitFor({ timeout: 15_000 });
  await button.click();
}
