import { expect, it } from 'vitest';
import { pngWithText, withText } from '../../src/cards/png.ts';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { picture } from '../support/picture.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

const card = {
  spec: 'chara_card_v2',
  spec_version: '2.0',
  data: {
    name: 'Seraphina',
    description: `{{char}} guards the glade. ${'Her forest is old and kind. '.repeat(100)}`,
    personality: 'caring, protective',
    scenario: '{{user}} wakes in a cottage. {{random::x::y}}',
    first_mes: '*{{char}} sets down a cup of tea.* "You are awake, {{user}}."',
    alternate_greetings: ['"The glade is quiet tonight."', '"Rest, {{user}}. You are safe."'],
    creator: 'a forest author',
    character_version: '1.0.0',
    tags: ['fantasy'],
    character_book: { name: 'Eldwood', entries: [{ keys: ['glade'], content: 'The glade is warded.' }] },
  },
};
const file = (c: unknown, name = 'seraphina.png') => ({
  name,
  mimeType: 'image/png',
  buffer: Buffer.from(withText(picture(), { chara: Buffer.from(JSON.stringify(c)).toString('base64') })),
});

it('a card picked on the NPCs page keeps its fields; a new chat opens on its greeting, alternates swipe', async () => {
  const { page } = browser;
  await page.goto(`${app.url}/npcs`);
  await page.getByLabel('Import a character card').setInputFiles(file(card));
  await page
    .getByRole('status')
    .filter({ hasText: 'Imported Seraphina with a lorebook of 1 entry.' })
    .waitFor();
  const row = page.locator('.npc-list li', { hasText: 'Seraphina' });
  await row.waitFor();
  // The card's picture is the NPC's avatar, in the list and in the transcript.
  await row.locator('img.avatar').waitFor();
  const href = await row.getByText('Export card').getAttribute('href');
  const exported = await app.api(href!, { cookie: browser.cookie });
  expect(((await exported.json()) as { data: { first_mes: string } }).data.first_mes).toBe(
    card.data.first_mes,
  );
  // The same card again: offered as an update of the NPC it made.
  await page.getByLabel('Import a character card').setInputFiles(file(card, 'again.png'));
  await page.getByRole('button', { name: 'Update that NPC' }).click();
  await page.getByRole('status').filter({ hasText: 'Updated Seraphina' }).waitFor();
  expect(await page.locator('.npc-list li', { hasText: 'Seraphina' }).count()).toBe(1);
  // The editor shows the card's fields, and warns of a macro no prompt would expand.
  await row.getByRole('button', { name: 'Edit' }).click();
  await page.getByLabel('Personality').waitFor();
  expect(await page.getByLabel('Personality').inputValue()).toBe('caring, protective');
  await page.getByText('Not understood, left out of the prompt: {{random::x::y}}').waitFor();
  await shoot(page, 'card-imported');

  await page.goto(`${app.url}/`);
  await page.locator('label.chip', { hasText: 'Seraphina' }).getByRole('checkbox').check();
  await page.getByRole('button', { name: 'Start conversation' }).click();
  const greeting = page.locator('article.message.npc').first();
  await greeting.getByText('sets down a cup of tea').waitFor();
  await greeting.locator('.sibling-count', { hasText: '1/3' }).waitFor();
  await greeting.locator('img.avatar').waitFor();
  expect(
    await greeting
      .locator('img.avatar')
      .evaluate((i) => (i as unknown as { naturalWidth: number }).naturalWidth),
  ).toBe(2);
  await shoot(page, 'card-greeting');
  await greeting.getByRole('button', { name: 'Next branch' }).click();
  await page.locator('article.message.npc').getByText('The glade is quiet tonight.').waitFor();
  await page.locator('article.message.npc .sibling-count', { hasText: '2/3' }).waitFor();

  // A Party: who answers is chosen per Conversation.
  const api = (path: string, body?: unknown, method?: string) =>
    app.api(path, { cookie: browser.cookie, body, method }).then((r) => r.json());
  const { npcs } = (await api('/api/npcs')) as { npcs: { id: string; name: string }[] };
  const tomas = (await api('/api/npcs', { name: 'Brother Tomas' })) as { npc: { id: string } };
  const party = (await api('/api/conversations', {
    npcIds: [npcs.find((n) => n.name === 'Seraphina')!.id, tomas.npc.id],
  })) as { conversation: { id: string } };
  await page.goto(`${app.url}/c/${party.conversation.id}`);
  const patched = page.waitForResponse(
    (r) => r.url().endsWith(party.conversation.id) && r.request().method() === 'PATCH',
  );
  // A Party's "Who answers" is under the chat's Actions.
  await page.getByRole('button', { name: 'Actions' }).click();
  await page.getByLabel('Who answers').selectOption('each');
  await patched;
  const saved = (await api(`/api/conversations/${party.conversation.id}`)) as {
    conversation: { replyMode: string };
  };
  expect(saved.conversation.replyMode).toBe('each');
  await shoot(page, 'card-party');

  await page.goto(`${app.url}/npcs`);
  await page.getByLabel('Import a character card').setInputFiles({
    name: 'picture.png',
    mimeType: 'image/png',
    buffer: Buffer.from(pngWithText({ Comment: 'holiday' })),
  });
  await page.getByText('This PNG holds no character card').waitFor();
  await shoot(page, 'card-refused');
});
