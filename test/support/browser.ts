import { existsSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

const SYSTEM_BROWSERS = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
  '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
];

let found: Promise<{ path: string; args: string[] }> | undefined;
/**
 * The browser the tests drive: CHROME_PATH (or CHROMIUM_PATH) when set, else a system Chrome/Chromium, else the
 * headless Chromium that ships inside the @sparticuz/chromium package (unpacked to the temp folder once), so
 * `npm test` needs no apt step and no download.
 */
export function findBrowser(): Promise<{ path: string; args: string[] }> {
  found ??= (async () => {
    const chosen = process.env.CHROME_PATH ?? process.env.CHROMIUM_PATH;
    if (chosen) return { path: chosen, args: [] };
    const system = SYSTEM_BROWSERS.find((p) => existsSync(p));
    if (system) return { path: system, args: [] };
    const packaged = (await import('@sparticuz/chromium')).default;
    packaged.setGraphicsMode = false;
    // The package unpacks to <temp>/chromium and runs whatever is there: another user's copy it may not run
    // (root's, mode 700: spawn EACCES), or one planted in a shared /tmp. So it unpacks into this user's cache.
    const own = path.join(os.homedir(), '.cache', 'agentsville', 'chromium');
    mkdirSync(own, { recursive: true, mode: 0o700 });
    const before = process.env.TMPDIR;
    process.env.TMPDIR = own;
    try {
      // Not the package's own flag list: it is made for AWS Lambda and turns off web security, which the
      // Content-Security-Policy tests must see enforced.
      return { path: await packaged.executablePath(), args: ['--no-zygote'] };
    } finally {
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
    }
  })();
  return found;
}

export interface Browser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/** A headless Chromium in a fresh profile (PLATFORM.md lists the flags these machines need). */
export async function openBrowser(options: { javaScriptEnabled?: boolean } = {}): Promise<Browser> {
  const browser = await findBrowser();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'av-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: browser.path,
    headless: true,
    javaScriptEnabled: options.javaScriptEnabled ?? true,
    args: [
      ...browser.args,
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

/** Saves what the page shows at 1280 px and 390 px (`<name>-<width>.png` under test/output/), whole. */
export async function shoot(page: Page, name: string): Promise<void> {
  // The page scrolls inside the app's frame: let it grow so the whole page is in the picture. The chat is one
  // screen with its own scroller (ChatLayout): it is taken as the screen shows it, at a phone's height on a phone.
  const chat = (await page.locator('.chat-layout').count()) > 0;
  // (A page outside the app's frame, such as a server-rendered reading page, needs no help: with JavaScript off
  // a style tag could not even be added.)
  const framed = (await page.locator('.shell').count()) > 0;
  const style =
    chat || !framed
      ? undefined
      : await page.addStyleTag({
          content: '.shell { height: auto !important } .page { overflow: visible !important }',
        });
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: chat && width === 390 ? 844 : 900 });
    await page.screenshot({ path: path.join(OUTPUT_DIR, `${name}-${width}.png`), fullPage: !chat });
  }
  await style?.evaluate((s) => s.remove());
  await page.setViewportSize({ width: 1280, height: 900 });
}

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
