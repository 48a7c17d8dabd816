import type { Page } from 'playwright-core';
import type { TestApp } from './app.ts';
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
