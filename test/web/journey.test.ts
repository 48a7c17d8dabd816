import { expect, it } from 'vitest';
import type { TestApp } from '../support/app.ts';
import { textScript } from '../support/fakeProvider.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

it('a Player builds an NPC, talks with it, renames and deletes the Conversation, and sees usage — by keyboard', async () => {
  const { page } = browser;
  // No browser prompt or confirm: the app asks in dialogs of its own.
  page.on('dialog', (d) => {
    throw new Error(`a browser ${d.type()} dialog opened`);
  });

  // NPCs: create one; the Village default is shown where the NPC inherits it.
  await page.goto(`${app.url}/npcs`);
  await page.getByLabel('Name').fill('Ada');
  await page.getByLabel('Job Title').fill('Librarian');
  await page.getByLabel('Description').fill('Keeps the maps.');
  await page.getByLabel('Thinking (show reasoning)').check();
  await page.getByLabel('Job Title').press('Enter');
  await page.locator('.npc-list li', { hasText: 'Ada' }).waitFor();
  expect(await page.locator('.npc-list li').textContent()).toContain('fake (default)');

  // A new Conversation with that NPC, entirely from the keyboard.
  await page.getByRole('link', { name: 'Conversations' }).click();
  // Exactly 'Ada': the NPCs page's "Edit Ada" matches a loose label, and may still be showing.
  await page.getByLabel('Ada', { exact: true }).focus();
  await page.keyboard.press('Space');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/c\//);
  app.fake.enqueue(textScript('Welcome to the map room.', { prompt_tokens: 40, completion_tokens: 6 }));
  await page.getByLabel('Message').fill('Where are the maps?');
  await page.keyboard.press('Enter');
  await page.locator('article.message.npc footer .usage').waitFor();
  expect(await page.locator('article.message.npc .usage').textContent()).toContain('40 in · 6 out');

  // The list shows it, most recently active first; rename and delete (with confirmation).
  await page.getByRole('link', { name: 'Conversations' }).click();
  const row = page.locator('.conversation-list li').first();
  await expect.poll(() => row.locator('.title').textContent()).toBe('Where are the maps?');
  await row.getByRole('button', { name: 'Rename' }).click();
  // The rename dialog opens with the title selected, takes the new one, and Enter saves it.
  const rename = page.getByRole('dialog', { name: 'Rename conversation' });
  await expect
    .poll(() => rename.getByLabel('Title').evaluate((e) => e === e.ownerDocument.activeElement))
    .toBe(true);
  await page.keyboard.type('Maps and more');
  await page.keyboard.press('Enter');
  await page.locator('.conversation-list .title', { hasText: 'Maps and more' }).waitFor();
  await expect.poll(() => rename.count()).toBe(0);

  await page.getByRole('link', { name: 'Usage' }).click();
  await page.locator('table tbody tr', { hasText: 'Ada' }).waitFor();
  expect(await page.locator('.totals').textContent()).toContain('1 replies');
  expect(await page.locator('.recharts-surface').count()).toBeGreaterThan(0);

  await page.getByRole('link', { name: 'Conversations' }).click();
  await page.locator('.conversation-list li').first().getByRole('button', { name: 'Delete' }).click();
  // Escape keeps it; the dialog's Delete deletes it.
  const ask = page.getByRole('dialog', { name: 'Delete “Maps and more”?' });
  await ask.waitFor();
  await page.keyboard.press('Escape');
  await expect.poll(() => ask.count()).toBe(0);
  expect(await page.locator('.conversation-list li').count()).toBe(1);
  await page.locator('.conversation-list li').first().getByRole('button', { name: 'Delete' }).click();
  await ask.getByRole('button', { name: 'Delete' }).click();
  await page.locator('.empty').waitFor();
});

it('Village settings are read-only for a Player who is not an admin', async () => {
  await browser.page.goto(`${app.url}/village`);
  await browser.page.getByText('Only a Village admin').waitFor();
  expect(await browser.page.getByLabel('History budget (tokens)').isDisabled()).toBe(true);
});
