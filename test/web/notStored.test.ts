import { expect, it } from 'vitest';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { textScript } from '../support/fakeProvider.ts';
import { png } from '../support/files.ts';
import { setupConversation } from '../support/turns.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

// ADR 0099: the start frame is sent before the turn's COMMIT is answered. A COMMIT that fails after it (here
// PostgreSQL's own refusal at COMMIT, from a deferred constraint trigger) stores nothing: the web app, which let
// go of the words when the stream opened, gives them back with the attachment, and says why.
it('a Message accepted and then not stored comes back to the composer, with its attachment and why', async () => {
  const { page, cookie } = browser;
  await app.db.sql.unsafe(`
    create function refuse_at_commit() returns trigger language plpgsql as $$
    begin
      if new.text like 'Refuse:%' then raise exception 'injected failure at commit'; end if;
      return null;
    end $$;
    create constraint trigger refuse_at_commit after insert on messages deferrable initially deferred
      for each row execute function refuse_at_commit();`);
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }]);
  await page.goto(`${app.url}/c/${conversationId}`);
  await page.locator('form.composer input[type=file]').setInputFiles([
    { name: 'tides.txt', mimeType: 'text/plain', buffer: Buffer.from('high at six') },
    { name: 'harbour.png', mimeType: 'image/png', buffer: png(48, 32) },
  ]);
  await expect.poll(() => page.locator('.attachment-chip.ready').count()).toBe(2);
  const words = 'Refuse: what are the tides of Brest today?';
  await page.locator('#composer-text').fill(words);
  const asked = app.fake.requests.length;
  await page.getByRole('button', { name: 'Send' }).click();

  await page.getByRole('alert').filter({ hasText: 'could not be saved' }).waitFor();
  await expect.poll(() => page.locator('#composer-text').inputValue()).toBe(words);
  const chips = page.locator('.attachment-chip.ready');
  await expect
    .poll(() => chips.allTextContents())
    .toEqual([expect.stringContaining('tides.txt'), expect.stringContaining('harbour.png')]);
  // Each with its size, and the picture with its thumbnail again (from the server: its local preview went).
  expect(await chips.locator('.chip-size').count()).toBe(2);
  const thumb = chips.filter({ hasText: 'harbour.png' }).locator('img.chip-thumb');
  await expect
    .poll(() => thumb.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth))
    .toBe(48);
  expect(await chips.filter({ hasText: 'tides.txt' }).locator('img').count()).toBe(0);
  // Nothing was asked of the Provider, and nothing is in the transcript.
  expect(app.fake.requests.length).toBe(asked);
  await expect.poll(() => page.locator('.transcript article.message').count()).toBe(0);
  await shoot(page, 'not-stored');

  // Sent again once the database stores it: it goes, attachment and all, and the box empties.
  await app.db.sql.unsafe('drop trigger refuse_at_commit on messages');
  app.fake.enqueue(textScript('High water at six.'));
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.transcript article.message.npc').filter({ hasText: 'High water at six.' }).waitFor();
  expect(await page.locator('#composer-text').inputValue()).toBe('');
  expect(await page.locator('.attachment-chip').count()).toBe(0);
  const asked2 = JSON.stringify(app.fake.requests.at(-1)!.body.messages);
  expect(asked2).toContain('high at six');
  // The picture went with it, to a Model that reads pictures.
  expect(asked2).toContain('data:image/png;base64,');
  await expect.poll(() => page.getByRole('alert').filter({ hasText: 'could not be saved' }).count()).toBe(0);
});
