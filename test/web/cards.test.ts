import { expect, it } from 'vitest';
import { pngWithText } from '../../src/cards/png.ts';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

it('a character card file picked on the NPCs page becomes an NPC; a broken one says why', async () => {
  const { page } = browser;
  await page.goto(`${app.url}/npcs`);
  const card = {
    spec: 'chara_card_v2',
    spec_version: '2.0',
    data: {
      name: 'Seraphina',
      description: 'A forest guardian.',
      character_book: { entries: [{ keys: ['glade'], content: 'The glade is warded.' }] },
    },
  };
  await page.getByLabel('Import a character card').setInputFiles({
    name: 'seraphina.png',
    mimeType: 'image/png',
    buffer: Buffer.from(pngWithText({ chara: Buffer.from(JSON.stringify(card)).toString('base64') })),
  });
  await page
    .getByRole('status')
    .filter({ hasText: 'Imported Seraphina with 1 lorebook entry in Memory.' })
    .waitFor();
  await page.locator('.npc-list li', { hasText: 'Seraphina' }).waitFor();
  const href = await page
    .locator('.npc-list li', { hasText: 'Seraphina' })
    .getByText('Export card')
    .getAttribute('href');
  const exported = await app.api(href!, { cookie: browser.cookie });
  expect(((await exported.json()) as { data: { name: string } }).data.name).toBe('Seraphina');
  await shoot(page, 'card-imported');

  await page.getByLabel('Import a character card').setInputFiles({
    name: 'picture.png',
    mimeType: 'image/png',
    buffer: Buffer.from(pngWithText({ Comment: 'holiday' })),
  });
  await page.getByText('This PNG holds no character card').waitFor();
  await shoot(page, 'card-refused');
});
