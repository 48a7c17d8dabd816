import type { Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { startTestApp, type TestApp } from './app.ts';
import { type Browser, openBrowser } from './browser.ts';

/** A browser signed in to the test app as a fresh Player (the session cookie set directly). */
export async function openSignedIn(app: TestApp): Promise<Browser & { cookie: string }> {
  const { cookie } = await app.signIn();
  const browser = await openBrowser();
  await browser.context.addCookies([
    { name: 'av_session', value: cookie.split('=')[1]!, url: app.url, httpOnly: true, sameSite: 'Lax' },
  ]);
  return { ...browser, cookie };
}

export type SignedIn = Awaited<ReturnType<typeof openSignedIn>>;

/** A browser test file's app and signed-in browser: started before its tests, closed after them. */
export function useSignedInApp(set: (app: TestApp, browser: SignedIn) => void): void {
  let app: TestApp | undefined;
  let browser: SignedIn | undefined;
  beforeAll(async () => {
    app = await startTestApp();
    browser = await openSignedIn(app);
    set(app, browser);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });
}

/** Each Part of each Message on the page, as [kind, text]: what "reload equals stream" compares. */
export function partsOnPage(page: Page, selector = 'article.message.npc') {
  return page.$$eval(selector, (articles) =>
    articles.map((a) =>
      [...a.querySelectorAll('.parts > *')].map((p) => {
        const kind = p.classList.contains('reasoning')
          ? 'reasoning'
          : p.classList.contains('tool')
            ? `tool:${p.getAttribute('data-tool-state')}`
            : 'text';
        // A tool is identified by its name: its state (running while streamed, settled later) is in `kind`.
        const text =
          kind === 'reasoning'
            ? (p.querySelector('.reasoning-text')?.textContent ?? '')
            : kind.startsWith('tool')
              ? (p.querySelector('.tool-name')?.textContent ?? '')
              : (p.textContent ?? '');
        return [kind, text.trim()];
      }),
    ),
  );
}
