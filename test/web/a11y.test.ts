import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { OUTPUT_DIR } from '../support/browser.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { setupConversation } from '../support/turns.ts';

/**
 * axe-core on every page of the app, at a desktop's and a phone's width: no violation it rates serious or
 * critical. Each page is also saved as a picture (a11y-<name>-<width>.png) to look at.
 */
// Evaluated through the DevTools protocol, not added as a <script>: the app's Content-Security-Policy (script-src
// 'self') refuses an injected inline script, and the test should see the page as its CSP makes it.
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const WIDTHS = [
  { width: 1280, height: 900 },
  { width: 390, height: 844 },
];

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string; html: string }[];
}

let local: LocalApp;
/** Moderate and minor findings: written to test/output/a11y-lesser.txt, not failed on. */
const lesser = new Set<string>();
beforeAll(async () => {
  local = await startLocalApp();
}, 120_000);
afterAll(async () => {
  await local?.close();
});

/** The serious and critical violations on the page as it is now, at each width, as readable lines. */
async function audit(page: Page, name: string): Promise<string[]> {
  const found: string[] = [];
  for (const size of WIDTHS) {
    await page.setViewportSize(size);
    await page.waitForTimeout(150); // layout and transitions settle after the resize
    if (!(await page.evaluate(`'axe' in window`))) await page.evaluate(AXE);
    const violations = (await page.evaluate(
      `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)`,
    )) as Violation[];
    for (const v of violations.filter((x) => x.impact !== 'serious' && x.impact !== 'critical')) {
      lesser.add(`[${v.impact}] ${v.id} (${v.help}) on ${name}`);
    }
    for (const v of violations.filter((x) => x.impact === 'serious' || x.impact === 'critical')) {
      for (const n of v.nodes) {
        const summary = (n.failureSummary ?? '').replace(/\s+/g, ' ').slice(0, 300);
        found.push(
          `${name} @${size.width}: [${v.impact}] ${v.id} (${v.help}) at ${n.target.join(' ')}: ${summary}`,
        );
      }
    }
    // The page scrolls inside the app's frame: let it grow so the whole page is in the picture (not the chat,
    // which is one screen with its own scroller).
    const chat = (await page.locator('.chat-layout').count()) > 0;
    const dialog = (await page.locator('dialog[open]').count()) > 0;
    const style =
      chat || dialog
        ? undefined
        : await page.addStyleTag({
            content: '.shell { height: auto !important } .page { overflow: visible !important }',
          });
    await page.screenshot({
      path: path.join(OUTPUT_DIR, `a11y-${name}-${size.width}.png`),
      fullPage: !chat && !dialog,
    });
    await style?.evaluate((s) => s.remove());
  }
  await page.setViewportSize(WIDTHS[0]!);
  return found;
}

async function visit(page: Page, url: string, ready: string): Promise<void> {
  await page.goto(url);
  await page.locator(ready).first().waitFor();
  await page.waitForLoadState('networkidle');
}

it('axe-core finds no serious or critical issue on any page, at 1280 and 390 px', async () => {
  const { app, browser } = local;
  const { page } = browser;
  const found: string[] = [];

  // Signed out: the sign-in page, with the demo accounts.
  await visit(page, app.url, 'h1');
  found.push(...(await audit(page, 'signed-out')));

  const alice = await local.signInAs('alice.test');
  const { conversationId } = await setupConversation(app, alice.cookie, [
    { name: 'Ada', jobTitle: 'Librarian', thinking: true },
    { name: 'Bo', jobTitle: 'Framer' },
    { name: 'Cy', jobTitle: 'Courier' },
  ]);
  const say = (text: string) =>
    app
      .api(`/api/conversations/${conversationId}/messages`, { cookie: alice.cookie, body: { text } })
      .then((r) => r.text());
  // Turns of every kind: text, reasoning and a tool call, and a failure.
  app.fake.enqueue(async (r) => {
    r.reasoning('Considering the shelves.');
    r.text('Let me look that up. ');
    r.toolCallStart(0, 'call_1', 'catalogue_search', '{"query":"maps"}');
    r.finish('tool_calls');
  });
  app.fake.enqueue((r) => {
    r.text('Found **three** maps: the *old* one, the new one and `the copy`.');
    r.finish();
  });
  await say('Any maps in the library?');
  app.fake.enqueue((r) => {
    r.text('The vault is under the stairs.');
    r.finish();
  });
  await say('And the vault?');
  // Regenerated, and failing: the reply forks, and the transcript shows its ‹ 2/2 › branch arrows.
  app.fake.enqueue((r) => {
    r.text('Starting… ');
    r.streamError('upstream overloaded, try later');
  });
  await app
    .api(`/api/conversations/${conversationId}/regenerate`, { cookie: alice.cookie, body: {} })
    .then((r) => r.text());

  await visit(page, `${app.url}/`, 'h1');
  found.push(...(await audit(page, 'conversations')));

  // Search results, on the Conversations page.
  await page.locator('#search-input').fill('maps');
  await page.locator('.search-results').waitFor();
  await page.waitForLoadState('networkidle');
  found.push(...(await audit(page, 'search')));

  await visit(page, `${app.url}/c/${conversationId}`, 'article.message.npc[data-status=failed] .siblings');
  found.push(...(await audit(page, 'conversation')));

  await visit(page, `${app.url}/npcs`, '.npc-list li');
  found.push(...(await audit(page, 'npcs')));
  await page.getByRole('button', { name: 'Edit Bo' }).click();
  await page.getByRole('heading', { name: 'Edit Bo' }).waitFor();
  found.push(...(await audit(page, 'npcs-edit')));
  await page.locator('#npc-list-heading').scrollIntoViewIfNeeded();
  await page
    .locator('.npc-list li')
    .filter({ hasText: 'Cy' })
    .getByRole('button', { name: 'Delete' })
    .click();
  await page.locator('dialog[open]').waitFor();
  found.push(...(await audit(page, 'npcs-dialog')));
  await page.keyboard.press('Escape');

  await visit(page, `${app.url}/tools`, 'h1');
  found.push(...(await audit(page, 'tools')));

  await visit(page, `${app.url}/c/${conversationId}/publish`, 'h1');
  found.push(...(await audit(page, 'publish')));

  await visit(page, `${app.url}/usage`, 'h1');
  found.push(...(await audit(page, 'usage')));

  await visit(page, `${app.url}/village`, 'h1');
  found.push(...(await audit(page, 'village')));

  // Published, then read as a reader would.
  const res = await app.api(`/api/conversations/${conversationId}/publication`, {
    method: 'PUT',
    cookie: alice.cookie,
    body: { title: 'The map question', choices: {} },
  });
  expect(res.status).toBe(200);
  const rkey = ((await res.json()) as { uri: string }).uri.split('/').pop()!;
  await visit(page, `${app.url}/profile/alice.test/thread/${rkey}`, 'h1');
  found.push(...(await audit(page, 'thread')));
  await visit(page, `${app.url}/profile/alice.test`, 'h1');
  found.push(...(await audit(page, 'author')));
  await visit(page, `${app.url}/threads`, 'h1');
  found.push(...(await audit(page, 'threads')));

  await visit(page, `${app.url}/no/such/page`, 'h1');
  found.push(...(await audit(page, 'not-found')));

  // To read, not to fail on.
  writeFileSync(path.join(OUTPUT_DIR, 'a11y-lesser.txt'), [...lesser].join('\n'));
  expect(found, `axe-core violations:\n${found.join('\n')}`).toEqual([]);
}, 300_000);
