import { expect, it } from 'vitest';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

it('a Conversation exported from its page imports back from the Conversations page', async () => {
  const { page, cookie } = browser;
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }]);
  app.fake.enqueue((r) => {
    r.text('Third shelf, left.');
    r.finish();
  });
  await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Where is Dune?' },
    }),
  );
  await page.goto(`${app.url}/c/${conversationId}`);
  await page.locator('article.message.npc').waitFor();
  await shoot(page, 'conversation-export-links');
  const href = await page.getByText('Export JSON').getAttribute('href');
  const file = await (await app.api(href!, { cookie })).text();
  expect((await app.api(`${href}?format=md`, { cookie })).status).toBe(200);

  await page.goto(`${app.url}/`);
  await page.getByLabel('Import a conversation').setInputFiles({
    name: 'Where is Dune.json',
    mimeType: 'application/json',
    buffer: Buffer.from(file),
  });
  const status = page.getByRole('status').filter({ hasText: 'Imported' });
  await status.waitFor();
  expect(await status.textContent()).toContain('(2 messages)');
  await shoot(page, 'conversation-imported');
  await status.getByRole('link').click();
  await page.locator('article.message.npc', { hasText: 'Third shelf, left.' }).waitFor();
  expect(page.url()).not.toContain(conversationId);
});
