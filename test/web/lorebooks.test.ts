import { expect, it } from 'vitest';
import { withText } from '../../src/cards/png.ts';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { textScript } from '../support/fakeProvider.ts';
import { picture } from '../support/picture.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

// Issue 29 in Chromium: an NPC's lorebooks on its page — entries seen, edited, added, deleted, World Info
// imported and attached — and an entry reaching the prompt the fake Provider receives only when its key is in
// the chat, and only for the NPCs the book belongs to.
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
    name: 'Maren',
    description: 'The lantern-keeper of the marsh.',
    first_mes: '*{{char}} raises a lamp.* "Awake, {{user}}?"',
    alternate_greetings: ['"Another night on the water."'],
    creator: 'a marsh author',
    character_book: {
      name: 'Fenmoor',
      entries: [
        { id: 0, keys: ['heron'], content: 'LORE-HERON: herons are omens.', enabled: true, constant: false },
        { id: 1, keys: ['reed'], content: 'LORE-REED: to be deleted.', enabled: true, constant: false },
      ],
    },
  },
};
const worldInfo = {
  entries: {
    '0': { uid: 0, key: ['ledger'], content: 'LORE-LEDGER: the ledgers are kept in the crypt.', order: 10 },
  },
};

/** The system prompt of the last streamed request the fake Provider received. */
const lastSystem = () => {
  const req = app.fake.requests.filter((r) => r.body.stream).at(-1)!;
  return JSON.stringify(req.body.messages[0]);
};

it('an NPC’s lorebook is seen and edited on its page; an entry reaches the prompt only on its key, only for its NPC', async () => {
  const { page, cookie } = browser;
  const png = withText(picture(), { chara: Buffer.from(JSON.stringify(card)).toString('base64') });
  const imported = await fetch(`${app.url}/api/npcs/import`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body: png,
  });
  expect(imported.status).toBe(201);
  const maren = ((await imported.json()) as { npc: { id: string } }).npc;
  const tomas = (await (
    await app.api('/api/npcs', { cookie, body: { name: 'Brother Tomas', grants: [{ kind: 'memory' }] } })
  ).json()) as { npc: { id: string } };

  await page.goto(`${app.url}/npcs`);
  const row = page.locator('.npc-list li', { hasText: 'Maren' });
  await row.locator('img.avatar').waitFor();
  await row.getByRole('button', { name: 'Edit' }).click();
  const book = page.getByRole('region', { name: 'Lorebook Fenmoor' });
  await book.waitFor();
  expect(await book.getByLabel('Entry 1 keys').inputValue()).toBe('heron');
  expect(await book.getByLabel('Entry 1 content').inputValue()).toBe('LORE-HERON: herons are omens.');
  // Edit: the heron entry also answers to a regex; the reed entry goes; a new one keyed by a regex is added.
  await book.getByLabel('Entry 1 keys').fill('heron\n/egrets?/i');
  await book.getByRole('button', { name: 'Delete entry 2' }).click();
  await book.getByRole('button', { name: 'Add entry' }).click();
  await book.getByLabel('Entry 2 keys').fill('/lanterns?/i\n/(a+)+$/\n/(a)\\1/');
  await book.getByLabel('Entry 2 content').fill('LORE-LANTERN: the lanterns keep the drowned away.');
  await book.getByRole('button', { name: 'Save lorebook' }).click();
  await book.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
  // A backreference cannot run in linear time: it is said to never match.
  await book.getByText(/The key \/\(a\)\\1\/ is not a pattern this app runs safely/).waitFor();
  // World Info imported here is attached to Maren at once.
  const panel = page.getByRole('region', { name: 'Maren’s lorebooks' });
  await panel.getByLabel('Import World Info').setInputFiles({
    name: 'Abbey.json',
    mimeType: 'application/json',
    buffer: Buffer.from(JSON.stringify(worldInfo)),
  });
  await panel
    .getByRole('status')
    .filter({ hasText: 'Imported Abbey (1 entry), attached to Maren.' })
    .waitFor();
  await page.getByRole('region', { name: 'Lorebook Abbey' }).waitFor();
  expect(await panel.getByRole('checkbox', { name: /Abbey/ }).isChecked()).toBe(true);
  await shoot(page, 'lorebook-editor');

  const stored = (await (await app.api(`/api/npcs/${maren.id}/lorebooks`, { cookie })).json()) as {
    lorebooks: {
      name: string;
      embedded: boolean;
      book: { entries: { keys: string[]; content: string }[] };
    }[];
  };
  expect(stored.lorebooks.map((b) => [b.name, b.embedded])).toEqual([
    ['Fenmoor', true],
    ['Abbey', false],
  ]);
  expect(stored.lorebooks[0]!.book.entries.map((e) => e.keys)).toEqual([
    ['heron', '/egrets?/i'],
    ['/lanterns?/i', '/(a+)+$/', '/(a)\\1/'],
  ]);

  // A chat with Maren opens on her greeting, with her picture; the lore goes in only when a key is said.
  await page.goto(`${app.url}/`);
  await page.locator('label.chip', { hasText: 'Maren' }).getByRole('checkbox').check();
  await page.getByRole('button', { name: 'Start conversation' }).click();
  const greeting = page.locator('article.message.npc').first();
  await greeting.getByText('raises a lamp').waitFor();
  await greeting.locator('img.avatar').waitFor();
  const say = async (text: string, reply: string) => {
    app.fake.enqueue(textScript(reply));
    const box = page.getByLabel('Message');
    // The composer takes a Message once the reply before has finished (Send is back in place of Stop).
    const send = page.getByRole('button', { name: 'Send' });
    await send.waitFor();
    await box.fill(text);
    await expect.poll(() => send.isEnabled()).toBe(true);
    await send.click();
    await page.locator('article.message.player', { hasText: text }).waitFor();
    await page.locator('article.message.npc', { hasText: reply }).waitFor();
    await send.waitFor();
  };
  await say('What is the weather like?', 'Grey.');
  expect(lastSystem()).not.toContain('LORE-');
  await say('I saw two EGRETS by the water.', 'Omens.');
  expect(lastSystem()).toContain('LORE-HERON');
  expect(lastSystem()).not.toContain('LORE-LANTERN');
  expect(lastSystem()).not.toContain('LORE-REED');
  await say('Fine. And where is the ledger kept?', 'In the crypt.');
  expect(lastSystem()).toContain('LORE-LEDGER');
  await shoot(page, 'lorebook-chat');

  // Brother Tomas, asked the same, gets none of Maren's lore.
  const other = (await (
    await app.api('/api/conversations', { cookie, body: { npcIds: [tomas.npc.id] } })
  ).json()) as { conversation: { id: string } };
  await page.goto(`${app.url}/c/${other.conversation.id}`);
  await say('Lanterns, egrets and the ledgers: what do they mean?', 'I cannot say.');
  expect(lastSystem()).not.toContain('LORE-');
}, 120_000);
