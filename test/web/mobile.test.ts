import path from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, expect, it } from 'vitest';
import type { TestApp } from '../support/app.ts';
import { OUTPUT_DIR } from '../support/browser.ts';
import { textScript } from '../support/fakeProvider.ts';
import { png, upload } from '../support/files.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});
// This file sends more turns a minute than the Village allows a Player by default (20).
beforeAll(async () => {
  await app.db.sql`update village_settings set turns_per_minute = 1000`;
});

/** What the screen is giving the chat, measured in the page. */
interface Layout {
  viewport: { width: number; height: number };
  transcript: { top: number; height: number };
  composer: { top: number; bottom: number };
  /** The document, or the app's page frame, can scroll (a second scroller behind the transcript). */
  documentScrolls: boolean;
  pageScrolls: boolean;
  /** Elements wider than the screen (sideways scrolling). */
  sideways: string[];
}
const layout = (page: Page): Promise<Layout> =>
  page.evaluate(`(() => {
    const box = (s) => document.querySelector(s).getBoundingClientRect();
    const doc = document.scrollingElement;
    const main = document.querySelector('main.page');
    return {
      viewport: { width: innerWidth, height: innerHeight },
      transcript: { top: box('.transcript').top, height: box('.transcript').height },
      composer: { top: box('form.composer').top, bottom: box('form.composer').bottom },
      documentScrolls: doc.scrollHeight > doc.clientHeight + 1,
      pageScrolls: main.scrollHeight > main.clientHeight + 1,
      sideways: [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > innerWidth + 1 && e.checkVisibility())
        .map((e) => e.tagName.toLowerCase() + '.' + e.className),
    };
  })()`);

/** Is the transcript scrolled to its end (the newest Message in view)? */
const atEnd = (page: Page) =>
  page
    .locator('.transcript')
    .evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight <= 2 && el.scrollHeight > 0);

/** The first paragraph wholly inside the transcript's window: what the reader is reading. */
const lineInView = (page: Page) =>
  page.locator('.transcript').evaluate((el) => {
    const top = el.getBoundingClientRect().top;
    const p = [...el.querySelectorAll('.markdown p')].find((e) => e.getBoundingClientRect().top >= top);
    return p?.textContent ?? null;
  });

const snap = (page: Page, name: string) => page.screenshot({ path: path.join(OUTPUT_DIR, `${name}.png`) });

/** A turn through the API: the Player's words (and attachments), the fake Model's reply. */
async function say(conversationId: string, text: string, reply: string, attachments?: string[]) {
  app.fake.enqueue(textScript(reply));
  const res = await app.api(`/api/conversations/${conversationId}/messages`, {
    cookie: browser.cookie,
    body: { text, ...(attachments ? { attachments } : {}) },
  });
  expect(res.status, res.status === 200 ? '' : await res.clone().text()).toBe(200);
  const frames = await collectFrames(res);
  expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
}

const LONG =
  'The northern maps are on the third shelf, behind the atlases; the coastal charts in the drawer below. ';

it('at 390×844 the transcript has most of the screen, every action is in reach, and with the keyboard open (390×520) the composer stays in view', async () => {
  const { page } = browser;
  const { conversationId } = await setupConversation(app, browser.cookie, [
    { name: 'Ada Lovelace-Byron', jobTitle: 'Cartographer' },
    { name: 'Bartholomew', jobTitle: 'Archivist' },
  ]);
  const other = await setupConversation(app, browser.cookie, [{ name: 'Cleo' }]);
  for (let i = 0; i < 5; i++)
    await say(
      conversationId,
      `Where are the maps of the far northern reaches, volume ${i}, and who drew them?`,
      LONG.repeat(3),
    );

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${app.url}/c/${conversationId}`);
  await page.locator('article.message.npc').last().waitFor();
  await expect.poll(() => atEnd(page)).toBe(true);
  const phone = await layout(page);
  await snap(page, 'mobile-chat-390x844');
  // Most of the screen is the transcript; it is the one scroller (neither the document nor the frame scrolls).
  expect(phone.transcript.height).toBeGreaterThanOrEqual(0.6 * 844);
  expect(phone.documentScrolls).toBe(false);
  expect(phone.pageScrolls).toBe(false);
  expect(phone.sideways).toEqual([]);
  // The header is one line: the transcript starts near the top.
  expect(phone.transcript.top).toBeLessThan(120);
  // The composer and Regenerate are on screen, at the bottom.
  expect(phone.composer.bottom).toBeLessThanOrEqual(844);
  const regenerate = page.getByRole('button', { name: 'Regenerate' });
  const r = (await regenerate.boundingBox())!;
  expect(r.y + r.height).toBeLessThanOrEqual(844);
  expect(r.x + r.width).toBeLessThanOrEqual(390);

  // The actions are in one menu, each inside the screen.
  const actions = page.getByRole('button', { name: 'Actions' });
  expect(await actions.getAttribute('aria-expanded')).toBe('false');
  expect(await page.getByRole('link', { name: 'Export JSON' }).isVisible()).toBe(false);
  await actions.click();
  for (const item of [
    page.getByRole('button', { name: 'Rename' }),
    page.getByRole('link', { name: 'Export Markdown' }),
    page.getByRole('link', { name: 'Export JSON' }),
    page.getByRole('link', { name: 'Publish…' }),
  ]) {
    const b = (await item.boundingBox())!;
    expect(b.x).toBeGreaterThanOrEqual(0);
    expect(b.x + b.width).toBeLessThanOrEqual(390);
    expect(b.y + b.height).toBeLessThanOrEqual(844);
  }
  expect(await page.locator('.head-actions').textContent()).toContain('With Ada Lovelace-Byron, Bartholomew');
  await snap(page, 'mobile-chat-menu-390x844');
  // Rename, in place.
  await page.getByRole('button', { name: 'Rename' }).click();
  await page.getByLabel('Title').fill('Maps of the north');
  await page.getByLabel('Title').press('Enter');
  await expect
    .poll(() => page.locator('.conversation-head h1').textContent(), { timeout: 15_000 })
    .toBe('Maps of the north');
  expect((await layout(page)).sideways).toEqual([]);

  // The Conversation list is a drawer; the open one is marked; another is one tap away.
  await page.getByRole('button', { name: 'Your conversations' }).click();
  const drawer = page.locator('dialog.chat-drawer[open]');
  await drawer.waitFor();
  expect(await drawer.locator('a[aria-current=page]').textContent()).toBe('Maps of the north');
  await snap(page, 'mobile-chat-drawer-390x844');
  await drawer.locator(`a[href="/c/${other.conversationId}"]`).click();
  await page.waitForURL(`${app.url}/c/${other.conversationId}`);
  expect(await page.locator('dialog.chat-drawer[open]').count()).toBe(0);
  await page.goBack();
  await page.locator('article.message.npc').last().waitFor();

  // The keyboard open: the visible screen is 520 px tall. The composer is whole and on screen, the transcript
  // keeps a useful part, still at the newest Message; the app's bar steps aside.
  await page.setViewportSize({ width: 390, height: 520 });
  await page.getByLabel('Message').focus();
  await expect.poll(() => atEnd(page)).toBe(true);
  // The resize is laid out over the next frames (under load, more than one): measured once it has settled.
  await expect
    .poll(async () => {
      const l = await layout(page);
      return { scrolls: l.documentScrolls, composerInView: l.composer.bottom <= 520 };
    })
    .toEqual({ scrolls: false, composerInView: true });
  const keyboard = await layout(page);
  await snap(page, 'mobile-chat-390x520');
  expect(keyboard.composer.bottom).toBeLessThanOrEqual(520);
  expect(keyboard.transcript.height).toBeGreaterThanOrEqual(0.5 * 520);
  expect(keyboard.documentScrolls).toBe(false);
  expect(keyboard.sideways).toEqual([]);
  expect(await page.getByRole('button', { name: 'Actions' }).isVisible()).toBe(true);
  // Four files queued: two short rows, the transcript keeps most of its room, Send stays on screen.
  await page.getByTestId('attach-input').setInputFiles(
    ['north.png', 'south-coast-survey.png', 'east.png', 'the-western-isles.png'].map((name, i) => ({
      name,
      mimeType: 'image/png',
      buffer: png(30 + i, 20),
    })),
  );
  // (The fourth waits for one of the server's three upload slots.)
  await expect.poll(() => page.locator('.attachment-chip.ready').count(), { timeout: 20_000 }).toBe(4);
  const queued = await layout(page);
  await snap(page, 'mobile-chat-files-390x520');
  expect(queued.composer.bottom).toBeLessThanOrEqual(520);
  expect(queued.transcript.height).toBeGreaterThanOrEqual(0.35 * 520);
  expect(queued.sideways).toEqual([]);
  const send = (await page.getByRole('button', { name: 'Send' }).boundingBox())!;
  expect(send.y + send.height).toBeLessThanOrEqual(520);
  const removes = page.getByRole('button', { name: /^Remove / });
  while ((await removes.count()) > 0) await removes.first().click();

  // A wide screen: the Conversation list beside the chat, no drawer button, still one scroller.
  await page.setViewportSize({ width: 1280, height: 800 });
  const side = page.getByRole('navigation', { name: 'Your conversations' });
  await expect.poll(() => side.isVisible()).toBe(true);
  expect(await side.locator('a[aria-current=page]').textContent()).toBe('Maps of the north');
  expect(await page.getByRole('button', { name: 'Your conversations' }).isVisible()).toBe(false);
  // The media queries apply at once; the visible height follows on the resize event a frame or more later.
  await expect
    .poll(() => page.evaluate(`document.documentElement.style.getPropertyValue('--app-height')`))
    .toBe('800px');
  const wide = await layout(page);
  await snap(page, 'mobile-chat-1280x800');
  expect(wide.documentScrolls).toBe(false);
  expect(wide.pageScrolls).toBe(false);
  expect(wide.transcript.height).toBeGreaterThanOrEqual(0.6 * 800);
}, 120_000);

it('opens at the newest Message with pictures: each picture’s box is reserved from its stored size, so nothing moves when they load', async () => {
  const { page, cookie } = browser;
  const { conversationId } = await setupConversation(app, cookie);
  // The upload reads the size from the picture's header.
  const picture = async (w: number, h: number) => {
    const res = await upload(app, cookie, conversationId, `p-${w}x${h}.png`, png(w, h, [40, 90, 200]));
    const part = (await res.json()) as { id: string; width?: number; height?: number };
    expect(part).toMatchObject({ width: w, height: h });
    return part.id;
  };
  for (let i = 0; i < 6; i++)
    await say(
      conversationId,
      `Picture ${i}`,
      LONG,
      [await picture(400, 300), await picture(120, 360)], // landscape and portrait
    );

  // Pictures answer only when let through: the transcript is laid out before any arrives.
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  await page.route('**/api/attachments/*', async (route) => {
    await released;
    await route.continue();
  });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${app.url}/c/${conversationId}`);
  await page.locator('article.message.npc').last().waitFor();
  await expect.poll(() => atEnd(page)).toBe(true);
  const before = await page.locator('.transcript').evaluate((el) => el.scrollHeight);
  // Each thumbnail's box is the picture scaled into 240×180, before a byte of it has arrived.
  const boxes = await page
    .locator('article.message.player .thumb img')
    .evaluateAll((imgs) =>
      imgs.map((i) => [
        (i as unknown as { complete: boolean; naturalWidth: number }).naturalWidth,
        Math.round(i.getBoundingClientRect().width),
        Math.round(i.getBoundingClientRect().height),
      ]),
    );
  expect(boxes.length).toBeGreaterThan(0);
  for (const [loaded, w, h] of boxes) {
    expect(loaded).toBe(0);
    expect([
      [240, 180],
      [60, 180],
    ]).toContainEqual([w, h]);
  }
  release();
  await expect
    .poll(() =>
      page
        .locator('article.message.player .thumb img')
        .evaluateAll((imgs) =>
          imgs.every((i) => (i as unknown as { naturalWidth: number }).naturalWidth > 0),
        ),
    )
    .toBe(true);
  expect(await page.locator('.transcript').evaluate((el) => el.scrollHeight)).toBe(before);
  expect(await atEnd(page)).toBe(true);
  await snap(page, 'mobile-pictures-390x844');
  await page.unroute('**/api/attachments/*');

  // After a reload, and after sending pictures from the composer: at the newest Message.
  await page.reload();
  await page.locator('article.message.npc').last().waitFor();
  await expect.poll(() => atEnd(page)).toBe(true);
  await page.getByTestId('attach-input').setInputFiles([
    { name: 'tall.png', mimeType: 'image/png', buffer: png(90, 400) },
    { name: 'wide.png', mimeType: 'image/png', buffer: png(500, 100) },
  ]);
  await expect.poll(() => page.locator('.attachment-chip.ready').count(), { timeout: 20_000 }).toBe(2);
  app.fake.enqueue(textScript(LONG.repeat(2)));
  await page.getByRole('button', { name: 'Send' }).click();
  // Stored: 7 turns, and nothing streaming any more.
  await expect
    .poll(() => page.locator('.transcript').getAttribute('data-count'), { timeout: 15_000 })
    .toBe('14');
  await expect.poll(() => page.locator('.live article').count()).toBe(0);
  await expect.poll(() => atEnd(page)).toBe(true);
  await snap(page, 'mobile-pictures-sent-390x844');
}, 120_000);

it('a reply streaming in keeps the newest words in view, until the reader scrolls up; then it leaves them where they are', async () => {
  const { page } = browser;
  const { conversationId } = await setupConversation(app, browser.cookie);
  for (let i = 0; i < 3; i++) await say(conversationId, `Question ${i}`, LONG.repeat(2));
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${app.url}/c/${conversationId}`);
  await page.locator('article.message.npc').last().waitFor();
  let go!: () => void;
  const gate = new Promise<void>((r) => {
    go = r;
  });
  app.fake.enqueue(async (r) => {
    for (let i = 0; i < 30; i++) {
      r.text(`line ${i}\n\n`);
      await r.wait(40);
    }
    await gate; // held here until the reader has scrolled up
    for (let i = 30; i < 60; i++) {
      r.text(`line ${i}\n\n`);
      await r.wait(20);
    }
    r.finish();
  });
  await page.getByLabel('Message').fill('Count slowly');
  await page.getByLabel('Message').press('Enter');
  const live = page.locator('.live article.message.npc');
  await expect.poll(() => live.textContent(), { timeout: 15_000 }).toContain('line 29');
  expect(await atEnd(page)).toBe(true);
  // The reader scrolls up to read something earlier.
  await page.locator('.transcript').hover();
  await page.mouse.wheel(0, -400);
  await expect.poll(() => atEnd(page)).toBe(false);
  const reading = await lineInView(page);
  expect(reading).toMatch(/^line \d+$/);
  go();
  await page.locator('article.message.npc', { hasText: 'line 59' }).waitFor();
  await expect.poll(() => page.locator('.live article').count()).toBe(0);
  // Stored and shown as a row now: the reader still reads the same line.
  expect(await lineInView(page)).toBe(reading);
  expect(await atEnd(page)).toBe(false);
}, 60_000);

it('an imported Conversation shows its attachments as names, “not included in the import”: no broken picture, no dead link', async () => {
  const { page, cookie } = browser;
  const at = new Date().toISOString();
  const file = {
    format: 'agentsville.conversation',
    version: 2,
    conversation: { title: 'Brought from elsewhere', createdAt: at },
    npcs: [{ name: 'Ada' }],
    messages: [
      {
        id: 'm1',
        parentId: null,
        role: 'player',
        parts: [
          { type: 'text', text: 'Here are the sketches.' },
          {
            type: 'file',
            id: crypto.randomUUID(),
            name: 'sunset.png',
            mediaType: 'image/png',
            size: 2048,
            width: 800,
            height: 600,
          },
          {
            type: 'file',
            id: crypto.randomUUID(),
            name: 'survey.pdf',
            mediaType: 'application/pdf',
            size: 9000,
          },
          {
            type: 'url',
            id: crypto.randomUUID(),
            url: 'https://example.com/charts',
            title: 'Old charts',
            size: 300,
          },
        ],
        status: 'complete',
        createdAt: at,
      },
      {
        id: 'm2',
        parentId: 'm1',
        role: 'npc',
        npc: 0,
        npcName: 'Ada',
        parts: [{ type: 'text', text: 'Lovely.' }],
        status: 'complete',
        createdAt: at,
      },
    ],
  };
  const res = await fetch(`${app.url}/api/conversations/import`, {
    method: 'POST',
    headers: { cookie, 'x-agentsville': '1', 'content-type': 'application/octet-stream' },
    body: JSON.stringify(file),
  });
  expect(res.status).toBe(201);
  const { conversation } = (await res.json()) as { conversation: { id: string } };

  for (const [width, height] of [
    [390, 844],
    [1280, 800],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.goto(`${app.url}/c/${conversation.id}`);
    await page.locator('article.message.npc').waitFor();
    const player = page.locator('article.message.player');
    expect(await player.locator('.file-chip.missing').allTextContents()).toEqual([
      'IMGsunset.pngnot included in the import',
      'FILEsurvey.pdfnot included in the import',
      'WEBOld chartsnot included in the import',
    ]);
    expect(await player.locator('img').count()).toBe(0);
    expect(await player.locator('a').count()).toBe(0);
    await snap(page, `imported-attachments-${width}`);
  }
  // The mark travels on: a second export says so, in JSON and in Markdown.
  const json = await (await app.api(`/api/conversations/${conversation.id}/export`, { cookie })).text();
  expect(json.match(/"missing":true/g)?.length).toBe(3);
  const md = await (
    await app.api(`/api/conversations/${conversation.id}/export?format=md`, { cookie })
  ).text();
  expect(md).toContain('survey.pdf (application/pdf, 9,000 bytes, not included in the import)');
}, 60_000);

/** WCAG contrast of an element's text against the first opaque background behind it (run in the page). */
const contrast = (page: Page, selector: string): Promise<number> =>
  page.evaluate(`((el) => {
      const rgb = (c) => (c.match(/[\\d.]+/g) ?? []).map(Number);
      const f = (v) => { const s = v / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
      const lum = ([r, g, b]) => 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
      let bg = [255, 255, 255];
      for (let e = el; e; e = e.parentElement) {
        const c = rgb(getComputedStyle(e).backgroundColor);
        if (c.length === 3 || (c.length === 4 && c[3] > 0.9)) { bg = c.slice(0, 3); break; }
      }
      const style = getComputedStyle(el);
      const opacity = Number(style.opacity);
      const fg = rgb(style.color).slice(0, 3).map((v, i) => v * opacity + bg[i] * (1 - opacity));
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
      return (a + 0.05) / (b + 0.05);
    })(document.querySelector(${JSON.stringify(selector)}))`);

it('the branch arrows read clearly (AA), and the Publish page has one scrollbar', async () => {
  const { page, cookie } = browser;
  const { conversationId } = await setupConversation(app, cookie);
  for (let i = 0; i < 12; i++) await say(conversationId, `Question ${i}: ${LONG}`, LONG.repeat(2));
  app.fake.enqueue(textScript('Another answer.'));
  await collectFrames(await app.api(`/api/conversations/${conversationId}/regenerate`, { cookie, body: {} }));
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${app.url}/c/${conversationId}`);
  const arrows = page.locator('article.message.npc .siblings');
  await arrows.last().waitFor();
  // ‹ (this is the second of two: enabled) and › (disabled) against the bubble.
  expect(await contrast(page, '.siblings button[aria-label="Previous branch"]')).toBeGreaterThanOrEqual(4.5);
  expect(await contrast(page, '.siblings button[aria-label="Next branch"]')).toBeGreaterThanOrEqual(4.5);
  const box = (await page.getByRole('button', { name: 'Previous branch' }).boundingBox())!;
  expect(Math.min(box.width, box.height)).toBeGreaterThanOrEqual(28);
  await arrows.last().scrollIntoViewIfNeeded();
  await snap(page, 'branch-arrows-390');

  // The publish page scrolls in its frame only: the document behind it does not (it was 3,863 px tall).
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto(`${app.url}/c/${conversationId}/publish`);
    await page
      .getByRole('button', { name: /Publish/ })
      .first()
      .waitFor();
    await page.waitForLoadState('networkidle');
    const sizes = await page.evaluate(`(() => {
      const doc = document.scrollingElement;
      const main = document.querySelector('main.page');
      return { doc: doc.scrollHeight - doc.clientHeight, page: main.scrollHeight - main.clientHeight };
    })()`);
    expect(sizes, `${width}`).toMatchObject({ doc: 0 });
    expect((sizes as { page: number }).page, `${width}`).toBeGreaterThan(800);
    await snap(page, `publish-one-scrollbar-${width}`);
  }
}, 120_000);
