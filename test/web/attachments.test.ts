import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { elf, png } from '../support/files.ts';
import { setupConversation } from '../support/turns.ts';
import { openSignedIn } from '../support/webapp.ts';

/** The browser's own classes, named for code that runs in the page (this project's tests have no DOM types). */
interface PageGlobals {
  DataTransfer: new () => { items: { add(file: unknown): void } };
  File: new (bits: unknown[], name: string, o: { type: string }) => unknown;
  ClipboardEvent: new (type: string, o: Record<string, unknown>) => unknown;
  DragEvent: new (type: string, o: Record<string, unknown>) => unknown;
}
type Img = { naturalWidth: number };

let app: TestApp;
let site: http.Server;
let browser: Awaited<ReturnType<typeof openSignedIn>>;
beforeAll(async () => {
  // An OpenAI Provider whose Model cannot read pictures (no request reaches it in this test).
  app = await startTestApp(
    {},
    { OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', ALLOW_PRIVATE_PAGE_URLS: 'true' },
  );
  browser = await openSignedIn(app);
  site = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(
      '<html><head><title>Pigments of the Renaissance</title></head><body><p>Lapis and vermilion.</p></body></html>',
    );
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
  site?.closeAllConnections();
  await new Promise((r) => site?.close(r));
});

it('a Player attaches a picture by paste and a file by drag-and-drop, sees them, and the NPC answers about them', async () => {
  const { page, cookie } = browser;
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada', jobTitle: 'Painter' }]);
  await page.goto(`${app.url}/c/${conversationId}`);
  const composer = page.locator('form.composer');
  await composer.waitFor();

  const picture = png(64, 48, [220, 40, 40]);
  // Paste: a picture on the clipboard, as a screenshot tool puts it there.
  await page.locator('#composer-text').evaluate((el, b64) => {
    const w = globalThis as unknown as PageGlobals;
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const data = new w.DataTransfer();
    data.items.add(new w.File([bytes], 'image.png', { type: 'image/png' }));
    el.dispatchEvent(
      new w.ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }) as Event,
    );
  }, picture.toString('base64'));
  // Drag-and-drop: a text file and an executable pretending to be a picture, dropped on the composer.
  const drop = async (files: { name: string; b64: string; type: string }[]) =>
    composer.evaluate((el, list) => {
      const w = globalThis as unknown as PageGlobals;
      const data = new w.DataTransfer();
      for (const f of list)
        data.items.add(
          new w.File([Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0))], f.name, { type: f.type }),
        );
      for (const type of ['dragover', 'drop'])
        el.dispatchEvent(
          new w.DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }) as Event,
        );
    }, files);
  await drop([
    { name: 'palette.txt', b64: Buffer.from('crimson, ochre, umber').toString('base64'), type: 'text/plain' },
    { name: 'sunset.png', b64: elf().toString('base64'), type: 'image/png' },
  ]);
  await expect.poll(() => page.locator('.attachment-chip.ready').count()).toBe(2);
  const refused = page.locator('.attachment-chip.refused');
  await refused.waitFor();
  expect(await refused.textContent()).toContain('holds application/x-elf (judged by its contents');
  // A refused file shows no picture of itself.
  expect(await refused.locator('img').count()).toBe(0);
  // The pasted picture shows as a thumbnail in its chip (a local preview, allowed by the page's CSP).
  const preview = page.locator('.attachment-chip.ready img.chip-thumb');
  await expect.poll(() => preview.evaluate((img) => (img as unknown as Img).naturalWidth)).toBe(64);
  await page.locator('#composer-text').fill('What colour is this?');
  await shoot(page, 'attachments-composer');

  app.fake.enqueue((r) => {
    r.text('A bold red rectangle.');
    r.finish();
  });
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('article.message.npc', { hasText: 'A bold red rectangle.' }).waitFor();
  // The refused chip stays (its reason can be read) until removed; the sent ones are gone.
  expect(await page.locator('.attachment-chip').count()).toBe(1);
  await page.getByRole('button', { name: 'Remove sunset.png' }).click();

  // The Provider received the picture itself (OpenAI-compatible: a data URL) and the file's text.
  const sent = JSON.stringify(app.fake.requests.at(-1)!.body.messages.at(-1));
  expect(sent).toContain(`data:image/png;base64,${picture.toString('base64')}`);
  expect(sent).toContain('crimson, ochre, umber');

  // After a reload, the picture is in the transcript (loaded, not a broken image) and the file is a chip.
  await page.reload();
  const thumb = page.locator('article.message.player .thumb img');
  await thumb.waitFor();
  await expect.poll(() => thumb.evaluate((img) => (img as unknown as Img).naturalWidth)).toBe(64);
  const chip = page.locator('article.message.player a.file-chip');
  expect(await chip.textContent()).toContain('palette.txt');
  expect(await chip.getAttribute('download')).toBe('palette.txt');
  await shoot(page, 'attachments-transcript');
  await page.locator('article.message.player .thumb').click();
  await page.locator('dialog.lightbox[open]').waitFor();
  await shoot(page, 'attachments-enlarged');
  await page.keyboard.press('Escape');
  await expect.poll(() => page.locator('dialog.lightbox[open]').count()).toBe(0);

  // Publishing: the editor says the attachments stay private, and takes a description instead.
  await page.goto(`${app.url}/c/${conversationId}/publish`);
  const note = page.getByTestId('attachment-note');
  await note.waitFor();
  expect(await note.textContent()).toContain('Its 2 attachments (image.png, palette.txt) stay private');
  await note.getByLabel(/Describe what was attached/).fill('a red rectangle');
  await shoot(page, 'attachments-publish');
});

it('attaches a page by its link, and says before sending when the NPC’s Model cannot see pictures', async () => {
  const { page, cookie } = browser;
  const { conversationId } = await setupConversation(app, cookie, [
    { name: 'Olde', provider: 'openai', model: 'gpt-3.5-turbo' },
  ]);
  await page.goto(`${app.url}/c/${conversationId}`);
  await page
    .getByTestId('attach-input')
    .setInputFiles({ name: 'fresco.png', mimeType: 'image/png', buffer: png(20, 20) });
  const note = page.locator('.capability-note');
  await note.waitFor();
  expect(await note.textContent()).toBe(
    'Olde’s Model (gpt-3.5-turbo) cannot read images: it will only be told you attached them.',
  );
  await page.getByRole('button', { name: 'Link' }).click();
  await page
    .getByLabel('Address of the page to attach')
    .fill(`http://127.0.0.1:${(site.address() as AddressInfo).port}/`);
  await page.getByRole('button', { name: 'Attach page' }).click();
  await page.locator('.attachment-chip.ready', { hasText: 'Pigments of the Renaissance' }).waitFor();
  await shoot(page, 'attachments-link-and-note');
});
