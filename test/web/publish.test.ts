import { AtpAgent } from '@atproto/api';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { shoot } from '../support/browser.ts';
import { insertConversation } from '../support/conversations.ts';
import { didWebHost } from '../support/didWeb.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';

let local: LocalApp;
beforeAll(async () => {
  local = await startLocalApp();
}, 120_000);
afterAll(() => local?.close());

/** Selects `word` inside the turn's text, as a Player dragging over it would. */
async function select(page: Page, messageId: string, word: string) {
  // A string, not a function: the test code is type-checked without the DOM's types.
  await page.evaluate(`(() => {
    const p = document.querySelector('[data-message-id="${messageId}"] [data-testid="turn-text"]');
    const walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const at = node.textContent.indexOf(${JSON.stringify(word)});
      if (at < 0) continue;
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + ${word.length});
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      return;
    }
    throw new Error('no such words in the turn');
  })()`);
}

it('a word redacted in one turn is shown covered in the title, another turn and a step summary, then published so', async () => {
  const alice = await local.signInAs('alice.test');
  const { app, browser } = local;
  const { page } = browser;
  page.on('dialog', (d) => d.accept());
  const { conversationId, ids } = await insertConversation(app.db.sql, alice.playerId, {
    title: 'My codename is PELICAN-7731, keep it between us.',
    turns: [
      { role: 'player', parts: [{ type: 'text', text: 'My codename is PELICAN-7731, keep it between us.' }] },
      {
        role: 'npc',
        parts: [
          {
            type: 'tool',
            id: 'c1',
            name: 'remember',
            input: { text: 'codename PELICAN-7731' },
            state: 'done',
            output: { remembered: 'codename PELICAN-7731' },
          },
          { type: 'text', text: 'Noted. Pelican-7731 stays with me, and the map is in the drawer.' },
        ],
      },
      { role: 'player', parts: [{ type: 'text', text: 'A private aside about Lisbon.' }] },
      { role: 'npc', parts: [{ type: 'text', text: 'Understood.' }] },
    ],
  });

  await page.goto(`${app.url}/c/${conversationId}/publish`);
  await page.getByRole('heading', { name: 'Publish', exact: true }).waitFor();
  const turns = page.locator('.publish-turn');
  await expect.poll(() => turns.count()).toBe(4);

  await turns.nth(2).getByLabel('Withhold this turn').check();
  await select(page, ids[0]!, 'PELICAN-7731');
  await turns.nth(0).getByRole('button', { name: 'Redact selection' }).click();
  // The editor points out where else the words are covered, before anything is written.
  await turns.nth(1).locator('mark.also-covered').waitFor();
  expect(await turns.nth(1).locator('mark.also-covered').textContent()).toBe('Pelican-7731');
  await turns
    .nth(1)
    .getByLabel(/Step 1: remember/)
    .fill('Saved pelican-7731 for later');

  const preview = page.locator('section.preview');
  const title = preview.locator('[data-testid="preview-session"] h3');
  await expect.poll(() => title.textContent()).toBe('My codename is ████████, keep it between us.');
  await expect
    .poll(() => preview.locator('.preview-turn').nth(1).textContent())
    .toContain('Noted. ████████ stays with me');
  expect(await preview.locator('.preview-turn').nth(1).locator('.steps').textContent()).toContain(
    'Saved ████████ for later',
  );
  expect(await preview.locator('.preview-turn').nth(2).textContent()).toContain('Withheld');
  expect((await preview.textContent())?.toLowerCase()).not.toContain('pelican');
  expect(await preview.textContent()).not.toContain('Lisbon');
  await shoot(page, 'publish-editor');

  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  // What was written is said at the top, with focus, and the link readers will use.
  const outcome = page.locator('#publish-outcome');
  await outcome.waitFor();
  expect(await outcome.textContent()).toBe('Published: 5 records written to your repo.');
  await expect.poll(() => outcome.evaluate((e) => e === e.ownerDocument.activeElement)).toBe(true);
  const status = page.getByRole('status').filter({ hasText: 'Read it as readers will' });
  await status.waitFor();
  // Said once: the line with the link does not repeat that it was published.
  expect(
    await page
      .getByRole('status')
      .filter({ hasText: /Published/ })
      .count(),
  ).toBe(1);
  // One link to the thread, not one per notice.
  expect(await page.getByRole('link', { name: 'Read it as readers will' }).count()).toBe(1);
  const uri = /at:\/\/\S+/.exec((await status.locator('code').textContent())!)![0];
  // Shared as a Bluesky post with the published title (its bars, not the covered word) and the thread's address.
  const [, , did, , rkey] = uri.split('/');
  const share = new URL((await page.getByTestId('share-bluesky').getAttribute('href'))!);
  expect(share.origin + share.pathname).toBe('https://bsky.app/intent/compose');
  expect(share.searchParams.get('text')).toContain(`${app.url}/profile/${did}/thread/${rkey}`);
  expect(share.searchParams.get('text')?.toLowerCase()).not.toContain('pelican');

  const agent = new AtpAgent({ service: app.running.localnet!.pdsUrl });
  const mine = async () => {
    const sessions = await agent.com.atproto.repo.listRecords({
      repo: alice.did,
      collection: 'click.aligned.chat.session',
    });
    const messages = await agent.com.atproto.repo.listRecords({
      repo: alice.did,
      collection: 'click.aligned.chat.message',
      reverse: true,
    });
    return [
      ...sessions.data.records.filter((r) => r.uri === uri),
      ...messages.data.records.filter((r) => (r.value as { session: string }).session === uri),
    ];
  };
  const published = await mine();
  expect(published).toHaveLength(5);
  expect(JSON.stringify(published).toLowerCase()).not.toMatch(/pelican|lisbon/);

  // Unpublish keeps every choice; publishing again brings the same link back.
  await page.getByRole('button', { name: 'Unpublish' }).click();
  await page
    .getByRole('dialog', { name: 'Unpublish this Conversation?' })
    .getByRole('button', { name: 'Unpublish' })
    .click();
  await page.getByRole('button', { name: 'Publish', exact: true }).waitFor();
  expect(await mine()).toEqual([]);
  await page.reload();
  await expect.poll(() => turns.count()).toBe(4);
  await turns.nth(0).locator('mark.redacted').waitFor();
  expect(await turns.nth(2).getByLabel('Withhold this turn').isChecked()).toBe(true);
  expect(
    await turns
      .nth(1)
      .getByLabel(/Step 1: remember/)
      .inputValue(),
  ).toBe('Saved pelican-7731 for later');
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  await page.locator('#publish-outcome', { hasText: 'Published: 5 records written' }).waitFor();
  const again = await mine();
  expect(again).toHaveLength(5);
  expect(again[0]!.uri).toBe(uri);
  expect(JSON.stringify(again).toLowerCase()).not.toMatch(/pelican|lisbon/);
  await shoot(page, 'publish-republished');
}, 120_000);

it('by keyboard: words typed are redacted, each redaction removable; problems link to their turn', async () => {
  const alice = await local.signInAs('alice.test');
  const { app, browser } = local;
  const { page } = browser;
  const { conversationId } = await insertConversation(app.db.sql, alice.playerId, {
    title: 'Plans',
    turns: [
      {
        role: 'player',
        parts: [
          {
            type: 'text',
            text: 'Meet me at the Harbour Gate, then the harbour gate again, by the ferry’s bell.',
          },
        ],
      },
      { role: 'npc', parts: [{ type: 'text', text: 'The Harbour Gate it is.' }] },
    ],
  });
  await page.goto(`${app.url}/c/${conversationId}/publish`);
  const turns = page.locator('.publish-turn');
  await expect.poll(() => turns.count()).toBe(2);

  // Nothing selected: the button says what to do instead of doing nothing.
  await turns.nth(0).getByRole('button', { name: 'Redact selection' }).click();
  await turns.nth(0).getByRole('status').filter({ hasText: 'Select words' }).waitFor();

  const words = turns.nth(0).getByLabel('Words to redact in this turn');
  await words.focus();
  await page.keyboard.type('harbour gate');
  await page.keyboard.press('Enter');
  // One redaction, and — covered everywhere, any case — the other place in this turn and the reply too.
  const chips = turns.nth(0).locator('ul.redactions li');
  await expect.poll(() => chips.count()).toBe(1);
  await turns.nth(0).locator('mark.also-covered').waitFor();
  await turns.nth(1).locator('mark.also-covered').waitFor();
  const preview = page.locator('section.preview');
  await expect.poll(async () => (await preview.textContent())?.toLowerCase().includes('harbour')).toBe(false);

  // Typed as a reader would type it (a straight quote): found where the text has the curly one.
  await words.fill("ferry's");
  await words.press('Enter');
  await expect.poll(() => chips.count()).toBe(2);

  // Removed: those words are published again; the other redaction still holds.
  await chips
    .nth(0)
    .getByRole('button', { name: /Stop redacting/ })
    .click();
  await expect.poll(() => chips.count()).toBe(1);
  await expect.poll(async () => (await preview.textContent())?.toLowerCase().includes('harbour')).toBe(true);
  expect((await preview.textContent())?.toLowerCase()).not.toContain('ferry');

  // A problem (a ref that is no record link) is listed with a link that takes the focus to its turn.
  await turns.nth(1).getByLabel('Also about (record links, comma-separated)').fill('not a link');
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  const link = page.locator('.problems a').first();
  await link.waitFor();
  expect(await link.textContent()).toBe('Turn 2');
  await link.click();
  await expect.poll(() => turns.nth(1).evaluate((e) => e === e.ownerDocument.activeElement)).toBe(true);
  await turns.nth(1).locator('ul.error').waitFor();
  await shoot(page, 'publish-problems');
}, 60_000);

it('words covered in a published Conversation go out at once, though the publish is refused for something else', async () => {
  const alice = await local.signInAs('alice.test');
  const { app, browser } = local;
  const { page } = browser;
  const { conversationId } = await insertConversation(app.db.sql, alice.playerId, {
    turns: [
      { role: 'player', parts: [{ type: 'text', text: 'Meet me at the Harbour Gate at nine.' }] },
      { role: 'npc', parts: [{ type: 'text', text: 'The Harbour Gate it is.' }] },
      // Fits as it is; with "nine" covered, its bars make it longer than a record may be.
      { role: 'player', parts: [{ type: 'text', text: 'nine '.repeat(2_900).trim() }] },
    ],
  });
  const put = await app.api(`/api/conversations/${conversationId}/publication`, {
    method: 'PUT',
    body: {},
    cookie: alice.cookie,
  });
  expect(put.status).toBe(200);
  const { uri } = (await put.json()) as { uri: string };
  const agent = new AtpAgent({ service: app.running.localnet!.pdsUrl });
  const out = async () =>
    JSON.stringify([
      (
        await agent.com.atproto.repo.listRecords({
          repo: alice.did,
          collection: 'click.aligned.chat.session',
        })
      ).data.records,
      (
        await agent.com.atproto.repo.listRecords({
          repo: alice.did,
          collection: 'click.aligned.chat.message',
        })
      ).data.records,
    ]);
  expect(await out()).toContain('Harbour Gate');

  await page.goto(`${app.url}/c/${conversationId}/publish`);
  const turns = page.locator('.publish-turn');
  await expect.poll(() => turns.count()).toBe(3);
  const words = turns.nth(0).getByLabel('Words to redact in this turn');
  await words.fill('harbour gate');
  await words.press('Enter');
  await words.fill('nine');
  await words.press('Enter');
  const withhold = turns.nth(2).getByLabel('Withhold this turn');
  expect(await withhold.isChecked()).toBe(false);
  // Something else the Player asked for cannot be published: a ref that is no record link.
  await turns.nth(1).getByLabel('Also about (record links, comma-separated)').fill('not a link');
  await page.getByRole('button', { name: 'Update publication' }).click();
  await page.locator('.problems a').first().waitFor();
  const note = page.getByTestId('covered-at-once');
  await note.waitFor();
  // The title (made from the first turn) and the three turns, the last now a hole: withheld here too, as in the
  // draft, so publishing again plans the hole that is out.
  expect(await note.textContent()).toBe(
    'The words you just covered are covered already in what was published: 4 records rewritten (turn 3 is now a hole: it could not stay published with those words covered). Nothing else you asked for went out.',
  );
  await expect.poll(() => withhold.isChecked()).toBe(true);
  // The refusal's problems, less turn 3's (too long with the bars): withheld now, it goes out as a hole.
  const problems = await page.locator('.problems li').allTextContents();
  expect(problems).toContainEqual(expect.stringMatching(/^Turn 2: /));
  expect(problems.filter((p) => p.startsWith('Turn 3'))).toEqual([]);
  const now = await out();
  expect(now).toContain(uri);
  expect(now.toLowerCase()).not.toContain('harbour');
  // The page as it settles: the publication and the preview read again after the refusal.
  await page.locator('section.preview').waitFor();
  // Turn 3's hole out is the one the next publish plans (its time turn 2's): the preview owes it nothing.
  await expect
    .poll(() => page.locator('.preview-turn.hole .meta').first().textContent())
    .toMatch(/· unchanged$/);
  await shoot(page, 'publish-covered-despite');
}, 60_000);

it('a turn withheld in a published Conversation is a hole at once, though the publish is refused (ADR 0094)', async () => {
  const alice = await local.signInAs('alice.test');
  const { app, browser } = local;
  const { page } = browser;
  const { conversationId } = await insertConversation(app.db.sql, alice.playerId, {
    turns: [
      { role: 'player', parts: [{ type: 'text', text: 'Which door is unlocked tonight?' }] },
      { role: 'npc', parts: [{ type: 'text', text: 'The Saltmarsh door, after the bell.' }] },
    ],
  });
  const put = await app.api(`/api/conversations/${conversationId}/publication`, {
    method: 'PUT',
    body: {},
    cookie: alice.cookie,
  });
  expect(put.status).toBe(200);
  const agent = new AtpAgent({ service: app.running.localnet!.pdsUrl });
  const out = async () =>
    JSON.stringify(
      (
        await agent.com.atproto.repo.listRecords({
          repo: alice.did,
          collection: 'click.aligned.chat.message',
        })
      ).data.records,
    );
  expect(await out()).toContain('Saltmarsh');

  await page.goto(`${app.url}/c/${conversationId}/publish`);
  const turns = page.locator('.publish-turn');
  await expect.poll(() => turns.count()).toBe(2);
  await turns.nth(1).getByLabel('Withhold this turn').check();
  // Something else the Player asked for cannot be published: a ref that is no record link.
  await turns.nth(0).getByLabel('Also about (record links, comma-separated)').fill('not a link');
  await page.getByRole('button', { name: 'Update publication' }).click();
  await page.locator('.problems a').first().waitFor();
  const note = page.getByTestId('covered-at-once');
  await note.waitFor();
  expect(await note.textContent()).toMatch(
    /^Turn 2, which you just withheld, is a hole already in what was published: \d+ records? rewritten\. Nothing else you asked for went out\.$/,
  );
  expect((await out()).toLowerCase()).not.toContain('saltmarsh');
  await page.locator('section.preview').waitFor();
  // The hole out is the one the next publish plans: the preview owes it nothing.
  await expect
    .poll(() => page.locator('.preview-turn.hole .meta').first().textContent())
    .toMatch(/· unchanged$/);
  await shoot(page, 'publish-withheld-despite');
}, 60_000);

it('while publishing, the page says how many turns are written of how many, from the stored plan', async () => {
  const alice = await local.signInAs('alice.test');
  const { app, browser } = local;
  const { page } = browser;
  const turns = Array.from({ length: 6 }, (_, i) => ({
    role: i % 2 ? ('npc' as const) : ('player' as const),
    parts: [{ type: 'text' as const, text: `Turn number ${i + 1}.` }],
  }));
  const { conversationId } = await insertConversation(app.db.sql, alice.playerId, {
    title: 'Six turns',
    turns,
  });
  // Each record marked written waits 300 ms in PostgreSQL itself, so the publish lasts long enough to watch.
  await app.db.sql.unsafe(`
    create or replace function slow_mark() returns trigger language plpgsql as $$
    begin
      if old.pending is not null and new.pending is null then perform pg_sleep(0.3); end if;
      return new;
    end $$;
    create trigger slow_mark before update on publication_records for each row execute function slow_mark();`);
  try {
    await page.goto(`${app.url}/c/${conversationId}/publish`);
    await page.getByRole('heading', { name: 'Publish', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Publish', exact: true }).click();
    const status = page.locator('.publish-progress');
    await expect.poll(async () => status.textContent(), { timeout: 10_000 }).toMatch(/Written 0 of 6 turns/);
    expect(await status.locator('progress').getAttribute('max')).toBe('6');
    await shoot(page, 'publish-progress');
    await page.getByRole('button', { name: 'Update publication' }).waitFor({ timeout: 20_000 });
    expect(await status.count()).toBe(0);
  } finally {
    await app.db.sql.unsafe('drop trigger if exists slow_mark on publication_records');
  }
}, 60_000);

it('links in a reply show as not checked yet, and are looked up only when the Player asks', async () => {
  const alice = await local.signInAs('alice.test');
  const { app, browser } = local;
  const { page } = browser;
  const host = await didWebHost();
  try {
    const pin = `at://${host.did}/app.bsky.feed.post/pin-4411-alice`;
    await insertConversation(app.db.sql, alice.playerId, {
      title: 'Pins',
      turns: [
        { role: 'player', parts: [{ type: 'text', text: 'Where was it?' }] },
        { role: 'npc', parts: [{ type: 'text', text: `Pinned at ${pin}.` }] },
      ],
    }).then(({ conversationId }) => page.goto(`${app.url}/c/${conversationId}/publish`));
    const note = page.locator('.publish-turn').nth(1).getByTestId('unchecked-links');
    await note.waitFor();
    expect(await note.textContent()).toContain(pin);
    // The page's previews have run (the preview shows the turn), and asked the host nothing.
    await page.locator('section.preview').getByText('not checked yet').waitFor();
    expect(host.requests).toEqual([]);
    await note.getByRole('button', { name: 'Check links' }).click();
    await note.waitFor({ state: 'detached' });
    await page.locator('section.preview').getByText('1 record link, 0 accounts mentioned').waitFor();
    expect(host.requests.length).toBeGreaterThan(0);
    await shoot(page, 'publish-links-checked');
  } finally {
    await host.close();
  }
}, 60_000);

it('what the session says of an NPC, a step’s name and what a hole shows are fields the Player fills', async () => {
  const alice = await local.signInAs('alice.test');
  const { app, browser } = local;
  const { page } = browser;
  const card = 'You are Mallory, raised at 12 Rue Secrète; never mention the ledger.';
  const { conversationId } = await insertConversation(app.db.sql, alice.playerId, {
    title: 'Docks',
    npc: { name: 'Mallory', jobTitle: 'Fixer', description: card },
    turns: [
      { role: 'player', parts: [{ type: 'text', text: 'Find the ship.' }] },
      {
        role: 'npc',
        parts: [
          { type: 'tool', id: 't1', name: 'acme-ledger__lookup', input: {}, state: 'done' },
          { type: 'text', text: 'Found it.' },
        ],
      },
      { role: 'npc', parts: [{ type: 'text', text: 'A reply to hold back.' }] },
    ],
  });
  await page.goto(`${app.url}/c/${conversationId}/publish`);
  const preview = page.locator('section.preview');
  await preview.locator('.preview-agents').getByText('Fixer').waitFor();
  // By default: name and Job Title, a generic step name; never the card.
  expect(await preview.textContent()).not.toMatch(/Rue Secrète|ledger/);
  const steps = preview.locator('ul.steps');
  await steps.getByText('mcp-tool').waitFor();

  await page.getByLabel(/About Mallory \(Fixer\)/).fill('Knows everyone at the docks.');
  await preview.locator('.preview-agents').getByText('Knows everyone at the docks.').waitFor();
  const turns = page.locator('.publish-turn');
  await turns.nth(1).getByRole('button', { name: 'Publish its real name (acme-ledger__lookup)' }).click();
  await steps.getByText('acme-ledger__lookup').waitFor();

  await turns.nth(2).getByLabel('Withhold this turn').check();
  const hole = preview.locator('li.hole');
  await hole.waitFor();
  expect(await hole.textContent()).not.toContain('fake-model');
  await turns
    .nth(2)
    .getByLabel(/Show which model wrote it/)
    .check();
  await hole.getByText('fake/fake-model').waitFor();
  await shoot(page, 'publish-choices');
}, 60_000);
