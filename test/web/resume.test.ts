import { expect, it } from 'vitest';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { messages, setupConversation } from '../support/turns.ts';
import { partsOnPage, type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

it('a reply survives a reload and a second tab: both follow it live, and Stop in one stops it for both', async () => {
  const { page, context, cookie } = browser;
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }]);
  app.fake.enqueue(async (r) => {
    for (let i = 0; i < 400 && !r.clientGone; i++) {
      r.text(`w${i} `);
      await r.wait(25);
    }
    r.finish();
  });
  await page.goto(`${app.url}/c/${conversationId}`);
  await page.locator('#composer-text').fill('Talk for a while');
  await page.getByRole('button', { name: 'Send' }).click();
  const live = page.locator('.live article.message.npc');
  const lengthOf = async (p = page) =>
    (
      (await p
        .locator('.live article.message.npc .parts')
        .textContent()
        .catch(() => '')) ?? ''
    ).length;
  await expect.poll(() => lengthOf(), { timeout: 10_000 }).toBeGreaterThan(30);

  // Reload mid-reply: the page follows the reply it finds streaming, from where it stands, and it keeps growing.
  await page.reload();
  await live.waitFor();
  const afterReload = await lengthOf();
  expect(afterReload).toBeGreaterThan(30);
  await expect.poll(() => lengthOf(), { timeout: 10_000 }).toBeGreaterThan(afterReload + 20);
  expect(await page.getByRole('button', { name: 'Stop' }).isVisible()).toBe(true);

  // A second tab follows it too; Stop there stops the reply for both.
  const second = await context.newPage();
  await second.goto(`${app.url}/c/${conversationId}`);
  await second.locator('.live article.message.npc').waitFor();
  await shoot(second, 'resume-second-tab');
  await second.getByRole('button', { name: 'Stop' }).click();
  for (const p of [page, second]) await p.locator('article.message.npc[data-status=stopped]').waitFor();
  const [, reply] = await messages(app, cookie, conversationId);
  expect(reply?.status).toBe('stopped');
  // What each tab shows is what is stored.
  for (const p of [page, second]) expect(await partsOnPage(p)).toEqual([[['text', reply!.text.trim()]]]);
  await second.close();
});
