import { AtpAgent } from '@atproto/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { textScript } from '../support/fakeProvider.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

let local: LocalApp;
beforeAll(async () => {
  local = await startLocalApp();
}, 120_000);
afterAll(() => local?.close());

it('a Player publishes from the browser: withholds a turn, redacts words, previews, publishes, unpublishes', async () => {
  const alice = await local.signInAs('alice.test');
  const { app, browser } = local;
  const { page } = browser;
  page.on('dialog', (d) => d.accept());
  const { conversationId } = await setupConversation(app, alice.cookie);
  app.fake.enqueue(textScript('The door code is 4417 and the map is in the drawer.'));
  await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie: alice.cookie,
      body: { text: 'Where is the map?' },
    }),
  );
  app.fake.enqueue(textScript('Fine.'));
  await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie: alice.cookie,
      body: { text: 'Private aside' },
    }),
  );

  await page.goto(`${app.url}/c/${conversationId}`);
  await page.getByRole('link', { name: 'Publish…' }).click();
  await page.getByRole('heading', { name: 'Publish' }).waitFor();
  const turns = page.locator('.publish-turn');
  await expect.poll(() => turns.count()).toBe(4);

  // Withhold the aside (turn 3), and cover the door code in turn 2.
  await turns.nth(2).getByLabel('Withhold this turn').check();
  const id = await turns.nth(1).getAttribute('data-message-id');
  await page.evaluate(`(() => {
    const node = document.getElementById('turn-text-${id}').firstChild;
    const range = document.createRange();
    const at = node.textContent.indexOf('4417');
    range.setStart(node, at);
    range.setEnd(node, at + 4);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
  })()`);
  await turns.nth(1).getByRole('button', { name: 'Redact selection' }).click();
  await expect
    .poll(() => turns.nth(1).locator('.redacted-preview').textContent())
    .toContain('████████ and the map');

  await page.getByRole('button', { name: 'Preview records' }).click();
  const records = page.locator('pre.records');
  await records.waitFor();
  const previewText = (await records.textContent()) ?? '';
  expect(previewText).toContain('The door code is ████████ and the map is in the drawer.');
  expect(previewText).not.toContain('4417');
  expect(previewText).toContain('"withheld": true');

  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  const status = page.getByRole('status').filter({ hasText: 'at://' }).first();
  await status.waitFor();
  const uri = /at:\/\/\S+/.exec((await status.textContent()) ?? '')![0];

  const agent = new AtpAgent({ service: app.running.localnet!.pdsUrl });
  const listed = await agent.com.atproto.repo.listRecords({
    repo: alice.did,
    collection: 'click.aligned.chat.message',
    reverse: true,
  });
  const mine = listed.data.records.filter((r) => (r.value as { session: string }).session === uri);
  expect(mine.map((r) => (r.value as { text?: string; withheld?: boolean }).text ?? 'WITHHELD')).toEqual([
    'Where is the map?',
    'The door code is ████████ and the map is in the drawer.',
    'WITHHELD',
    'Fine.',
  ]);

  // A reader with only the link sees the thread: holes, bars, who spoke.
  await page.getByRole('link', { name: 'read the published thread' }).click();
  await page.waitForURL(/\/profile\/did:plc:[^/]+\/thread\//);
  const thread = page.locator('ol.thread > li');
  await expect.poll(() => thread.count()).toBe(4);
  expect(await thread.nth(1).textContent()).toContain(
    'The door code is ████████ and the map is in the drawer.',
  );
  expect(await thread.nth(1).locator('.model').textContent()).toBe('fake/fake-model');
  expect(await thread.nth(2).textContent()).toContain('A turn happened here and was not published.');
  expect(await thread.nth(0).locator('.speaker').textContent()).toBe('@alice.test');
  await page.goBack();

  await page.getByRole('button', { name: 'Unpublish' }).click();
  await page.getByRole('button', { name: 'Publish', exact: true }).waitFor();
  const after = await agent.com.atproto.repo.listRecords({
    repo: alice.did,
    collection: 'click.aligned.chat.message',
  });
  expect(after.data.records.filter((r) => (r.value as { session: string }).session === uri)).toEqual([]);
}, 90_000);
