import { afterAll, beforeAll, expect, it } from 'vitest';
import { avatarBlob } from '../../src/lexicon/index.ts';
import { giveAvatar } from '../support/avatar.ts';
import { type Browser, openBrowser, shoot } from '../support/browser.ts';
import { insertConversation } from '../support/conversations.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { picture } from '../support/picture.ts';

// ADR 0065 in Chromium: the Player sees an NPC's picture beside a tick (off), ticks it and publishes; a reader with
// only the link sees it beside the agent's name, served by this server (server-rendered, then hydrated).

let local: LocalApp;
let reader: Browser;
beforeAll(async () => {
  local = await startLocalApp();
  reader = await openBrowser({ javaScriptEnabled: false });
}, 120_000);
afterAll(async () => {
  await reader?.close();
  await local?.close();
});

it('a ticked NPC picture is published and shown in the reader’s thread', async () => {
  const alice = await local.signInAs('alice.test');
  const { app, browser } = local;
  const { page } = browser;
  const { conversationId, npcId } = await insertConversation(app.db.sql, alice.playerId, {
    title: 'The lighthouse',
    npc: { name: 'Ada', jobTitle: 'Keeper' },
    turns: [
      { role: 'player', parts: [{ type: 'text', text: 'Is the lighthouse lit tonight?' }] },
      { role: 'npc', parts: [{ type: 'text', text: 'Every night since 1890.' }] },
    ],
  });
  const image = picture();
  await giveAvatar(app.db.sql, npcId, image);
  const a = (await avatarBlob(image))!;

  await page.goto(`${app.url}/c/${conversationId}/publish`);
  const tick = page.getByRole('checkbox', { name: 'Publish Ada’s picture' });
  await tick.waitFor();
  // Off by default: a card's picture is often someone else's art.
  expect(await tick.isChecked()).toBe(false);
  expect(await page.locator('.publish-avatar img').getAttribute('alt')).toBe('Ada');
  await page.locator('.preview-agents li', { hasText: 'Ada' }).waitFor();
  expect(await page.locator('.preview-agents img').count()).toBe(0);
  await tick.check();
  // The preview follows the tick: the session record it shows carries the picture before anything is written.
  await page.locator('.preview-agents img[alt="Ada"]').waitFor();
  await shoot(page, 'publish-avatar');
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  await page.locator('#publish-outcome').waitFor();
  const uri = (
    await app.db.sql<{ uri: string }[]>`
    select uri from index_sessions where record @> ${app.db.sql.json({ agents: [{ avatar: { ref: { $link: a.cid } } }] })}
      and did = ${alice.did}`
  )[0]?.uri;
  expect(uri).toBeDefined();
  const url = `${app.url}/profile/alice.test/thread/${uri!.split('/').pop()}`;
  const src = `/api/reader/avatars/${encodeURIComponent(alice.did)}/${a.cid}`;

  // Server-rendered (JavaScript off): the picture is in the HTML and loads under the page's policy.
  await reader.page.goto(url);
  const header = reader.page.locator('p.agents img.avatar');
  await header.waitFor();
  expect(await header.getAttribute('alt')).toBe('Ada');
  expect(await header.getAttribute('src')).toBe(src);
  expect(await header.getAttribute('loading')).toBe('lazy');
  await expect.poll(() => header.evaluate((img) => (img as { naturalWidth: number }).naturalWidth)).toBe(2);
  await shoot(reader.page, 'reader-avatar-noscript');

  // Hydrated, as a reader with JavaScript sees it: the same picture beside the name and on Ada's turn.
  await page.goto(url);
  const turn = page.locator('ol.thread li.npc img.avatar');
  await turn.waitFor();
  expect(await turn.getAttribute('alt')).toBe('Ada');
  await expect.poll(() => turn.evaluate((img) => (img as { naturalWidth: number }).naturalWidth)).toBe(2);
  await shoot(page, 'reader-avatar');
}, 120_000);
