import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { png } from '../support/files.ts';
import { setupConversation } from '../support/turns.ts';
import { openSignedIn } from '../support/webapp.ts';
import { gemini, startWireFake, type WireFake } from '../support/wireFakes.ts';

type Img = { naturalWidth: number };

// A picture a Gemini image Model makes, seen by the Player in the reply where it came; one the Village does not keep
// shown as a file not kept, saying why. Real Chromium, the real server and @ai-sdk/google against a fake Gemini.
let fake: WireFake;
let app: TestApp;
let browser: Awaited<ReturnType<typeof openSignedIn>>;
beforeAll(async () => {
  fake = await startWireFake();
  app = await startTestApp(
    {},
    { GOOGLE_GENERATIVE_AI_API_KEY: 'test-key', GOOGLE_BASE_URL: `${fake.origin}/v1beta` },
  );
  browser = await openSignedIn(app);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await fake?.close();
});

it('shows a picture the Model made in the reply, and a made file the Village did not keep as not kept', async () => {
  const { page, cookie } = browser;
  const { conversationId } = await setupConversation(app, cookie, [
    { name: 'Iris', jobTitle: 'Illustrator', provider: 'google', model: 'gemini-2.5-flash-image' },
  ]);
  const inline = (bytes: Uint8Array, mimeType: string) => ({
    inlineData: { mimeType, data: Buffer.from(bytes).toString('base64') },
  });
  const usage = { promptTokenCount: 10, candidatesTokenCount: 20 };
  fake.enqueue(() => [
    gemini.chunk([gemini.thought('Sketching the coastline first.')], usage),
    gemini.chunk([{ ...inline(png(80, 45, [90, 90, 90]), 'image/png'), thought: true }], usage),
    gemini.chunk([gemini.text('Here is the lighthouse at dusk:')], usage),
    gemini.chunk([inline(png(160, 90, [230, 140, 40]), 'image/png')], usage),
    gemini.chunk(
      [
        inline(
          Uint8Array.from({ length: 300 }, (_, i) => (i * 13) % 256),
          'audio/wav',
        ),
      ],
      usage,
    ),
    gemini.chunk([gemini.text('The sound of the waves did not come through, I am afraid.')], usage, 'STOP'),
  ]);
  await page.goto(`${app.url}/c/${conversationId}`);
  const box = page.getByLabel('Message');
  await box.fill('Paint the lighthouse, and let me hear the sea.');
  await box.press('Enter');
  const reply = page.locator('article.message.npc').last();
  // The answer's picture (the draft is folded away with the reasoning).
  const thumb = reply.locator('.parts > ul.attachments .thumb img');
  await thumb.waitFor();
  await expect.poll(() => thumb.evaluate((img) => (img as unknown as Img).naturalWidth)).toBe(160);
  const notKept = reply.locator('.file-chip.missing');
  await notKept.waitFor();
  expect(await notKept.textContent()).toContain(
    'file-3.wavNot kept. It is not a kind of file this Village keeps (unrecognised).',
  );
  // The draft it drew while thinking is folded away with its reasoning, and opens to show it.
  const drafts = reply.locator('details.thought-files');
  expect(await drafts.getAttribute('open')).toBeNull();
  await drafts.locator('summary').click();
  await expect
    .poll(() => drafts.locator('.thumb img').evaluate((img) => (img as unknown as Img).naturalWidth))
    .toBe(80);
  await expect.poll(() => reply.getAttribute('data-status')).toBe('complete');
  // As stored: after a reload, the same.
  await page.reload();
  await page.locator('article.message.npc .parts > ul.attachments .thumb img').waitFor();
  expect(await page.locator('article.message.npc .file-chip.missing').count()).toBe(1);
  await page.locator('article.message.npc details.thought-files summary').click();
  await shoot(page, 'made-files');
});
