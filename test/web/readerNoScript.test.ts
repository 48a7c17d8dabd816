import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { TID } from '@atproto/common-web';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { indexRecords, removeRecords } from '../../src/appview/store.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type Browser, OUTPUT_DIR, openBrowser, shoot } from '../support/browser.ts';
import { indexThread } from '../support/records.ts';

// #30: a thread reads in full with JavaScript off (a crawler, a careful reader), then the same HTML is hydrated by
// the reader's own bundle — no mismatch, no policy violation, none of the Player's app — and axe-core finds
// nothing serious on either.

let app: TestApp;
let noScript: Browser;
let withScript: Browser;
beforeAll(async () => {
  app = await startTestApp();
  noScript = await openBrowser({ javaScriptEnabled: false });
  withScript = await openBrowser();
}, 120_000);
afterAll(async () => {
  await noScript?.close();
  await withScript?.close();
  await app?.close();
});

const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
const createdAt = '2026-11-01T09:30:00.000Z';
const did = 'did:plc:noscript00000000000000001';

/** A thread of these turns and title, published by an author the index knows; its reading page's address. */
async function publishThread(title: string, turns: Record<string, unknown>[]): Promise<string> {
  const { rkey } = await indexThread(app.db.sql, { did, handle: 'carol.test' }, title, turns, createdAt);
  return `${app.url}/profile/carol.test/thread/${rkey}`;
}

/** A thread with every kind of turn the reader shows. */
function publish(): Promise<string> {
  const turns: Record<string, unknown>[] = [
    { role: 'user', text: 'Ada, is the **old map** of the harbour right? <script>window.pwned=1</script>' },
    {
      role: 'assistant',
      model: 'anthropic/claude-sonnet',
      steps: [
        { name: 'search', summary: 'looked for harbour maps, 1890–1910' },
        { name: 'fetch', failed: true },
      ],
      text: 'It is wrong; the vault code is ████████.\n\n- the pier moved\n- the lighthouse is ████████\n\n```ts\nconst pier = { moved: true };\n```',
    },
    { role: 'user', withheld: true },
    {
      role: 'user',
      text: 'And what did the post say?',
      refs: [{ uri: `at://${did}/app.bsky.feed.post/3kabcdefghijk`, cid: CID }],
      mentions: ['did:plc:mentioned000000000000001'],
    },
    ...Array.from({ length: 8 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      ...(i % 2 ? { model: 'openai/gpt-4o' } : {}),
      text: `Turn ${i + 5}: ${'The harbour master kept a second ledger. '.repeat(3)}`,
    })),
  ];
  return publishThread('The harbour map', turns);
}

/** axe-core on the page as it is; its serious and critical findings. */
async function axeSerious(page: Page): Promise<string[]> {
  const source = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  // Evaluated by the browser's debugging protocol, so the page's policy (which allows no such script) still holds.
  await page.evaluate(source);
  const result = (await page.evaluate('axe.run(document)')) as {
    violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
  };
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

async function readsInFull(page: Page) {
  const turns = page.locator('ol.thread > li');
  expect(await turns.count()).toBe(12);
  expect(await page.locator('h1').textContent()).toBe('The harbour map');
  expect(await turns.nth(0).locator('.speaker').textContent()).toBe('@carol.test');
  expect(await turns.nth(0).locator('strong').textContent()).toBe('old map');
  expect(await turns.nth(0).textContent()).toContain('<script>window.pwned=1</script>');
  expect(await turns.nth(1).locator('.speaker').textContent()).toBe('Ada');
  expect(await turns.nth(1).locator('.model').textContent()).toBe('anthropic/claude-sonnet');
  expect(await turns.nth(1).textContent()).toContain('the vault code is ████████.');
  expect(await turns.nth(1).locator('.steps li').first().textContent()).toContain('looked for harbour maps');
  expect(await turns.nth(1).locator('.steps li.failed').textContent()).toContain('(failed)');
  expect(await turns.nth(1).locator('pre code').textContent()).toContain('const pier');
  expect(await turns.nth(2).textContent()).toContain('A turn happened here and was not published.');
  expect(await turns.nth(3).locator('.ref small').textContent()).toContain('app.bsky.feed.post');
  expect(await turns.nth(3).textContent()).toContain('About did:plc:mentioned000000000000001');
  await expect.poll(() => turns.nth(11).textContent()).toContain('Turn 12:');
  expect(await turns.nth(11).isVisible()).toBe(true);
}

it('with JavaScript off the thread reads in full, at a desktop and a phone width', async () => {
  const url = await publish();
  const { page } = noScript;
  const res = await page.goto(url);
  expect(res?.status()).toBe(200);
  await readsInFull(page);
  await shoot(page, 'reader-noscript');
  // On a phone nothing (a long at:// URI, a code line's block) widens the page past the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  await page.setViewportSize({ width: 1280, height: 900 });
  // Nothing ran: the page is exactly the server's (hydration would have loaded the highlighter by now).
  expect(await page.locator('.code-block pre code span').count()).toBe(0);
  expect(await page.evaluate('window.pwned')).toBeUndefined();
}, 60_000);

it("with JavaScript the reader's bundle hydrates the same HTML: no mismatch, no violation, not the app", async () => {
  const url = await publish();
  const { page } = withScript;
  const problems: string[] = [];
  const scripts: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('request', (r) => {
    if (r.resourceType() === 'script') scripts.push(path.basename(new URL(r.url()).pathname));
  });
  await page.addInitScript(
    "document.addEventListener('securitypolicyviolation', (e) => console.error('CSP: ' + e.violatedDirective + ' ' + e.blockedURI))",
  );
  await page.goto(url);
  await readsInFull(page);
  // The highlighter arrives on demand (the thread has a named code block) and colours it after hydration.
  await page.locator('.code-block pre code span').first().waitFor();
  expect(await page.evaluate('window.pwned')).toBeUndefined();
  expect(problems).toEqual([]);
  expect(scripts.some((s) => s.startsWith('reader-'))).toBe(true);
  expect(scripts.some((s) => s.startsWith('rehype-highlight'))).toBe(true);
  expect(scripts.filter((s) => /^(app|UsagePage)-/.test(s))).toEqual([]);
  // Hydrated: the copy button is live.
  await page.getByRole('button', { name: 'Copy code' }).waitFor();
  expect(await axeSerious(page)).toEqual([]);
  await page.screenshot({ path: path.join(OUTPUT_DIR, 'reader-hydrated-1280.png'), fullPage: true });
}, 60_000);

it('axe-core finds nothing serious on the server-rendered page before any script', async () => {
  const url = await publish();
  const { page } = withScript;
  // The page as it comes (the reader's bundle not loaded), then axe-core alone.
  await page.route('**/assets/*.js', (route) => route.abort());
  try {
    await page.goto(url);
    await readsInFull(page);
    expect(await axeSerious(page)).toEqual([]);
  } finally {
    await page.unroute('**/assets/*.js');
  }
}, 60_000);

/** A long thread: 150 turns, one of them past the Markdown parser's bounds (ADR 0084). */
const publishLong = () =>
  publishThread(
    'The long watch',
    Array.from({ length: 150 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      ...(i % 2 ? { model: 'openai/gpt-4o' } : {}),
      text:
        i === 120
          ? `${'>'.repeat(3000)} the deepest quote\n\n${'*a '.repeat(500)}`
          : `Turn ${i + 1}: the *watch* changed at ${i} bells.`,
    })),
  );

it('a long thread reads page by page with JavaScript off, and its script keeps the same page', async () => {
  const url = await publishLong();
  const { page } = noScript;
  await page.goto(url);
  const turns = page.locator('ol.thread > li');
  expect(await turns.count()).toBe(100);
  expect(await turns.nth(0).textContent()).toContain('Turn 1:');
  expect(await page.locator('nav.pages').first().textContent()).toContain('Turns 1–100 of 150 · page 1 of 2');
  await page.getByRole('link', { name: 'Later turns →' }).last().click();
  await page.waitForURL(/\?page=2$/);
  expect(await turns.count()).toBe(50);
  expect(await turns.nth(0).textContent()).toContain('Turn 101:');
  expect(await page.locator('link[rel=canonical]').getAttribute('href')).toMatch(/\?page=2$/);
  // The turn past the parser's bounds is shown as written, and its neighbours as Markdown.
  const deep = turns.nth(20);
  expect(await deep.textContent()).toContain(`${'>'.repeat(3000)} the deepest quote`);
  expect(await deep.locator('.as-written .meta').textContent()).toContain('Shown as written');
  expect(await turns.nth(19).locator('em').textContent()).toBe('watch');
  await shoot(page, 'reader-long-thread-page-2');
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.getByRole('link', { name: '← Earlier turns' }).first().click();
  await page.waitForURL(/\?page=1$/);
  expect(await turns.count()).toBe(100);
  // No third page, nor a page that is not a number.
  expect((await page.goto(`${url}?page=3`))?.status()).toBe(404);
  expect((await page.goto(`${url}?page=x`))?.status()).toBe(404);

  // With its script, page 2 hydrates as it came, and its live refresh keeps page 2's turns.
  const live = withScript.page;
  const problems: string[] = [];
  live.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
  });
  live.on('pageerror', (e) => problems.push(e.message));
  await live.goto(`${url}?page=2`);
  const liveTurns = live.locator('ol.thread > li');
  expect(await liveTurns.count()).toBe(50);
  // A turn more, published while it is read: the refresh (every 5 s) brings page 2 of the thread as it is now:
  // its own turns and the new one, which fits on it.
  const session = `at://${did}/click.aligned.chat.session/${url.split('/').pop()}`;
  await indexRecords(app.db.sql, did, [
    {
      collection: 'click.aligned.chat.message',
      rkey: TID.nextStr(),
      cid: CID,
      record: {
        $type: 'click.aligned.chat.message',
        session,
        createdAt,
        role: 'user',
        text: 'Turn 151: relieved.',
      },
    },
  ]);
  await expect.poll(() => liveTurns.last().textContent(), { timeout: 15_000 }).toContain('Turn 151:');
  expect(await liveTurns.count()).toBe(51);
  expect(await liveTurns.nth(0).textContent()).toContain('Turn 101:');
  expect(await live.locator('nav.pages').first().textContent()).toContain('Turns 101–151 of 151');
  // What the refresh asks for is that page alone; with no page named, the first: never the whole thread.
  const api = `${app.url}/api/reader/threads/carol.test/${url.split('/').pop()}`;
  const paged = (await (await fetch(`${api}?page=2`)).json()) as {
    thread: { messages: unknown[] };
    window: { page: number; first: number; end: number; total: number };
  };
  expect(paged.thread.messages).toHaveLength(51);
  expect(paged.window).toMatchObject({ page: 2, first: 100, end: 151, total: 151 });
  const first = (await (await fetch(api)).json()) as { thread: { messages: unknown[] }; window: unknown };
  expect(first.thread.messages).toHaveLength(100);
  expect(first.window).toMatchObject({ page: 1, pages: 2, first: 0, end: 100, total: 151 });
  for (const bad of ['3', '0', 'x', '1e3']) expect((await fetch(`${api}?page=${bad}`)).status, bad).toBe(404);
  expect(problems).toEqual([]);
  expect(await axeSerious(live)).toEqual([]);
}, 90_000);

it("the app's own thread page, reached by a link within it, asks for one page at a time", async () => {
  const url = await publishLong();
  const rkey = url.split('/').pop()!;
  const { cookie } = await app.signIn();
  const browser = await openBrowser();
  try {
    await browser.context.addCookies([
      { name: 'av_session', value: cookie.split('=')[1]!, url: app.url, httpOnly: true, sameSite: 'Lax' },
    ]);
    const { page } = browser;
    const asked: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/reader/threads/')) asked.push(new URL(r.url()).search);
    });
    await page.goto(`${app.url}/`);
    await page.getByRole('link', { name: 'All published' }).click();
    await page.locator(`a[href$="/thread/${rkey}"]`).first().click();
    await page.waitForURL(new RegExp(`/thread/${rkey}$`));
    const turns = page.locator('ol.thread > li');
    await expect.poll(() => turns.count()).toBe(100);
    expect(await page.locator('nav.pages').first().textContent()).toContain(
      'Turns 1–100 of 150 · page 1 of 2',
    );
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((q) => q === '?page=1')).toBe(true);
    await shoot(page, 'app-long-thread-page-1');
  } finally {
    await browser.close();
  }
}, 90_000);

it('a thread unpublished while it is open is said so in its place, in the reading page and in the app', async () => {
  const url = await publishThread('The recalled letter', [
    { role: 'user', text: 'Read me the letter, Ada.' },
    { role: 'assistant', text: 'Dear harbour master, the ledger is false.' },
  ]);
  const rkey = url.split('/').pop()!;
  const session = `at://${did}/click.aligned.chat.session/${rkey}`;
  const { cookie } = await app.signIn();
  const inApp = await openBrowser();
  try {
    await inApp.context.addCookies([
      { name: 'av_session', value: cookie.split('=')[1]!, url: app.url, httpOnly: true, sameSite: 'Lax' },
    ]);
    await inApp.page.goto(`${app.url}/`);
    await inApp.page.getByRole('link', { name: 'All published' }).click();
    await inApp.page.locator(`a[href$="/thread/${rkey}"]`).first().click();
    const reading = withScript.page;
    await reading.goto(url);
    for (const page of [inApp.page, reading])
      await expect.poll(() => page.locator('ol.thread > li').count()).toBe(2);

    // Its author deletes it: each page's next refresh (every 5 s) puts the notice where the turns were.
    const turns = await app.db.sql<
      { uri: string }[]
    >`select uri from index_messages where session_uri = ${session}`;
    await removeRecords(app.db.sql, [{ uri: session }, ...turns.map((t) => ({ uri: t.uri }))]);
    for (const [page, name] of [
      [inApp.page, 'app-thread-unpublished'],
      [reading, 'reader-thread-unpublished'],
    ] as const) {
      const notice = page.locator('.unpublished');
      await expect.poll(() => notice.count(), { timeout: 15_000 }).toBe(1);
      expect(await notice.locator('h2').textContent()).toBe('This conversation is no longer published');
      expect(await page.locator('ol.thread > li').count()).toBe(0);
      // Nothing of it is shown, nor named in the tab.
      // biome-ignore lint/performance/useDomNodeTextContent: the text shown is what is asserted (the data stays in its script tag).
      expect(await page.locator('body').innerText()).not.toContain('the ledger is false');
      expect(await page.title()).toContain('No longer published');
      await shoot(page, name);
    }
    // And asked no more: a refresh's worth of time and then some, with no request for it.
    const asked: string[] = [];
    for (const page of [inApp.page, reading])
      page.on('request', (r) => {
        if (r.url().includes('/api/reader/threads/')) asked.push(r.url());
      });
    await new Promise((r) => setTimeout(r, 6_000));
    expect(asked).toEqual([]);
  } finally {
    await inApp.close();
  }
}, 90_000);

it('a page gone from a thread that got shorter is said so, with the way back to its start', async () => {
  const url = await publishLong();
  const session = `at://${did}/click.aligned.chat.session/${url.split('/').pop()}`;
  const reading = withScript.page;
  await reading.goto(`${url}?page=2`);
  await expect.poll(() => reading.locator('ol.thread > li').count()).toBe(50);
  // Its author deletes its last 60 turns: 90 are left, one page.
  const later = await app.db.sql<{ uri: string }[]>`select uri from index_messages
    where session_uri = ${session} order by rkey desc limit 60`;
  await removeRecords(
    app.db.sql,
    later.map((t) => ({ uri: t.uri })),
  );
  const notice = reading.locator('.unpublished');
  await expect.poll(() => notice.count(), { timeout: 15_000 }).toBe(1);
  expect(await notice.locator('h2').textContent()).toBe('This page is gone');
  await shoot(reading, 'reader-page-gone');
  await notice.getByRole('link', { name: 'Read it from the start' }).click();
  await reading.waitForURL(new RegExp(`/thread/${url.split('/').pop()}$`));
  expect(await reading.locator('ol.thread > li').count()).toBe(90);
}, 60_000);
