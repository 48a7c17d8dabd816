import { expect, it } from 'vitest';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { textScript } from '../support/fakeProvider.ts';
import { setupConversation } from '../support/turns.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

it('every page fits a 390 px phone: no sideways scrolling, its heading and primary action in view, a title of its own', async () => {
  const { page } = browser;
  const { conversationId } = await setupConversation(app, browser.cookie, [
    {
      name: 'Ada',
      jobTitle: 'Cartographer of the northern reaches',
      description: 'Keeps the maps.',
      prompt: '',
    },
  ]);
  app.fake.enqueue(
    textScript(`A very long reply with an unbroken path: ${'/segment'.repeat(40)} and some more words.`),
  );
  await app
    .api(`/api/conversations/${conversationId}/messages`, {
      cookie: browser.cookie,
      body: { text: 'Tell me where the maps are, and be thorough about every shelf, please.' },
    })
    .then((r) => r.text());

  // [path, name, the primary action a person came for, the tab title]
  const pages: [string, string, RegExp, RegExp][] = [
    ['/', 'conversations', /Start conversation/, /^Conversations · /],
    ['/npcs', 'npcs', /Create NPC/, /^NPCs · /],
    ['/tools', 'tools', /Add Skill/, /^Tools, Skills and Memory · /],
    ['/usage', 'usage', /./, /^Usage · /],
    ['/village', 'village', /./, /^Village · /],
    [`/c/${conversationId}`, 'conversation', /Send/, /^Tell me where the maps are/],
    [`/c/${conversationId}/publish`, 'publish-page', /Publish/, /^Publish · /],
    ['/threads', 'threads', /./, /^Recently published conversations · /],
  ];
  await page.setViewportSize({ width: 390, height: 800 });
  for (const [path, name, action, title] of pages) {
    await page.goto(`${app.url}${path}`);
    await page.locator('h1').first().waitFor();
    await page.waitForLoadState('networkidle');
    // What scrolls sideways: the document, or the app's frames (the page scrolls inside .page); and what runs
    // out of its box: a message or its text (code blocks scroll on their own, so they are not counted).
    const overflow = (await page.evaluate(`[document.documentElement,
        ...document.querySelectorAll('main, .page, .shell, article.message, .markdown, .markdown p')]
      .filter((e) => e.scrollWidth > e.clientWidth + 1)
      .map((e) => e.tagName.toLowerCase() + '.' + e.className + ': ' + e.scrollWidth + ' > ' + e.clientWidth)`)) as string[];
    expect(overflow, `${path} scrolls sideways`).toEqual([]);
    expect(await page.locator('h1').first().isVisible(), `${path} heading`).toBe(true);
    const heading = await page.locator('h1').first().boundingBox();
    expect(heading!.x + heading!.width, `${path} heading fits`).toBeLessThanOrEqual(390);
    if (action.source !== '.') {
      const button = page.getByRole('button', { name: action }).first();
      await button.scrollIntoViewIfNeeded();
      const box = await button.boundingBox();
      expect(box && box.x >= 0 && box.x + box.width <= 390, `${path} ${action} within the width`).toBe(true);
    }
    expect(await page.title()).toMatch(title);
    await shoot(page, `page-${name}`);
    await page.setViewportSize({ width: 390, height: 800 });
  }
}, 120_000);

it('on a phone the navigation is one bar whose Menu opens the links, and going somewhere closes it', async () => {
  const { page } = browser;
  await page.setViewportSize({ width: 390, height: 800 });
  await page.goto(`${app.url}/`);
  await page.locator('h1').first().waitFor();
  const menu = page.getByRole('button', { name: 'Menu' });
  const npcs = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'NPCs' });
  // Closed: the page's heading sits right under a one-row bar, and the links are out of the way.
  expect(await npcs.isVisible()).toBe(false);
  expect((await page.locator('h1').first().boundingBox())!.y).toBeLessThan(120);
  await menu.click();
  expect(await page.getByRole('button', { name: 'Close' }).getAttribute('aria-expanded')).toBe('true');
  expect(await npcs.isVisible()).toBe(true);
  await shoot(page, 'nav-menu-open');
  await page.setViewportSize({ width: 390, height: 800 });
  await npcs.click();
  await page.getByRole('heading', { name: 'NPCs', level: 1 }).waitFor();
  expect(await npcs.isVisible()).toBe(false);
  // Escape closes it too.
  await page.getByRole('button', { name: 'Menu' }).click();
  expect(await npcs.isVisible()).toBe(true);
  await page.keyboard.press('Escape');
  expect(await npcs.isVisible()).toBe(false);
  // On a wide screen the links are always there, and there is no Menu.
  await page.setViewportSize({ width: 1280, height: 800 });
  expect(await npcs.isVisible()).toBe(true);
  expect(await page.getByRole('button', { name: 'Menu' }).isVisible()).toBe(false);
}, 60_000);
