import { expect, it } from 'vitest';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

it('Regenerate keeps the old reply one click away, and editing a message in place starts a branch on Save', async () => {
  const { page, cookie } = browser;
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }]);
  app.fake.enqueue(textScript('A calm blue.'));
  await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Pick a colour' },
    }),
  );
  await page.goto(`${app.url}/c/${conversationId}`);
  await page.locator('article.message.npc', { hasText: 'A calm blue.' }).waitFor();

  app.fake.enqueue(textScript('A loud red.'));
  await page.getByRole('button', { name: 'Regenerate' }).click();
  const reply = page.locator('.transcript .virtual article.message.npc');
  await reply.filter({ hasText: 'A loud red.' }).waitFor();
  expect(await reply.locator('.sibling-count').textContent()).toBe('2/2');
  await shoot(page, 'branches-regenerated');
  await reply.getByRole('button', { name: 'Previous branch' }).click();
  await reply.filter({ hasText: 'A calm blue.' }).waitFor();
  expect(await reply.locator('.sibling-count').textContent()).toBe('1/2');

  // Edit the Player's message where it stands: its words in a box there, focused; the composer untouched.
  await page.locator('#composer-text').fill('a draft of mine');
  await page.locator('article.message.player').getByRole('button', { name: 'Edit' }).click();
  const editor = page.getByRole('form', { name: 'Edit your message' });
  const box = editor.getByLabel('Your message');
  expect(await box.inputValue()).toBe('Pick a colour');
  expect(await box.evaluate((e) => e === e.ownerDocument.activeElement)).toBe(true);
  // Escape leaves it as it was; Edit again, and Save starts a new branch.
  await page.keyboard.press('Escape');
  await expect.poll(() => editor.count()).toBe(0);
  await page.locator('article.message.player').getByRole('button', { name: 'Edit' }).click();
  await shoot(page, 'branches-editing');
  app.fake.enqueue(textScript('Seven.'));
  await box.fill('Pick a number');
  await editor.getByRole('button', { name: 'Save' }).click();
  await reply.filter({ hasText: 'Seven.' }).waitFor();
  const player = page.locator('.transcript .virtual article.message.player');
  expect(await player.textContent()).toContain('Pick a number');
  expect(await player.locator('.sibling-count').textContent()).toBe('2/2');
  expect(await page.locator('.transcript .virtual article.message').count()).toBe(2);
  await expect.poll(() => editor.count()).toBe(0);
  // What was being typed in the composer is still there.
  expect(await page.locator('#composer-text').inputValue()).toBe('a draft of mine');
  await shoot(page, 'branches-edited');
  // Back to the first question: its branch is where it was left.
  await player.getByRole('button', { name: 'Previous branch' }).click();
  await reply.filter({ hasText: 'A calm blue.' }).waitFor();
  expect(await player.textContent()).toContain('Pick a colour');
});
