import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { startMcpServer } from '../support/mcpServer.ts';
import { openSignedIn } from '../support/webapp.ts';

let app: TestApp;
let browser: Awaited<ReturnType<typeof openSignedIn>>;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
beforeAll(async () => {
  app = await startTestApp();
  browser = await openSignedIn(app);
  mcp = await startMcpServer();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await mcp?.close();
  await app?.close();
});

it('a Player grants Tools in the NPC editor and watches them used; a Party hands over on screen', async () => {
  const { page } = browser;
  await page.goto(`${app.url}/tools`);
  await page.getByLabel('Skill name').fill('maps');
  await page.getByLabel('Description').fill('Reading old maps.');
  await page.getByLabel('Instructions').fill('North is up.');
  await page.getByRole('button', { name: 'Add Skill' }).click();
  await page.getByText('Reading old maps.').waitFor();
  await page.getByLabel('Server name').fill('Calc');
  await page.getByLabel('URL').fill(mcp.url);
  await page.getByRole('button', { name: 'Add server' }).click();
  await page.locator('code', { hasText: mcp.url }).waitFor();

  await page.goto(`${app.url}/npcs`);
  // Grants are part of the NPC form: chosen at creation, saved by the one Save.
  await page.getByLabel('Name').fill('Ada');
  await page.getByLabel('Sandbox (a shell of its own for this Conversation)').check();
  await page.getByLabel('Memory (remember and recall)').check();
  await page.getByRole('button', { name: 'Create NPC' }).click();
  await page.locator('.npc-list li', { hasText: 'Ada' }).waitFor();
  await page.getByLabel('Name').fill('Bo');
  await expect
    .poll(() => page.getByLabel('Sandbox (a shell of its own for this Conversation)').isChecked())
    .toBe(false);
  await page.getByRole('button', { name: 'Create NPC' }).click();
  await page.locator('.npc-list li', { hasText: 'Bo' }).waitFor();

  const npcs = (await (await app.api('/api/npcs', { cookie: browser.cookie })).json()) as {
    npcs: { id: string; name: string }[];
  };
  const grantsOf = async (name: string) => {
    const id = npcs.npcs.find((n) => n.name === name)!.id;
    const body = (await (await app.api(`/api/npcs/${id}/grants`, { cookie: browser.cookie })).json()) as {
      grants: { kind: string }[];
    };
    return body.grants.map((g) => g.kind).sort();
  };
  expect(await grantsOf('Ada')).toEqual(['memory', 'sandbox']);
  expect(await grantsOf('Bo')).toEqual([]);

  // Editing shows the saved grants; ticking boxes quickly changes nothing until Save.
  await page.locator('.npc-list li', { hasText: 'Ada' }).getByRole('button', { name: 'Edit' }).click();
  await expect.poll(() => page.getByLabel('Memory (remember and recall)').isChecked()).toBe(true);
  await page.getByLabel('Skill: maps').check();
  await page.getByLabel('MCP: Calc').check();
  await page.getByLabel('Memory (remember and recall)').uncheck();
  await page.getByLabel('Memory (remember and recall)').check();
  expect(await grantsOf('Ada')).toEqual(['memory', 'sandbox']);
  await shoot(page, 'npc-grants');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { name: 'New NPC' }).waitFor();
  expect(await grantsOf('Ada')).toEqual(['mcp', 'memory', 'sandbox', 'skill']);

  // A Party of Ada and Bo; Ada runs a command, then hands over to Bo.
  await page.goto(`${app.url}/`);
  await page.getByLabel('Ada', { exact: true }).check();
  await page.getByLabel('Bo').check();
  await page.getByRole('button', { name: 'Start conversation' }).click();
  await page.waitForURL(/\/c\//);
  app.fake.enqueue(
    (r: Reply) => {
      r.toolCallStart(0, 'c1', 'bash', JSON.stringify({ command: 'echo mapped > map.txt && cat map.txt' }));
      r.finish('tool_calls');
    },
    (r: Reply) => {
      r.text('Saved the map. ');
      r.toolCallStart(0, 'c2', 'message_npc', JSON.stringify({ npc: 'Bo', message: 'Frame it, please.' }));
      r.finish('tool_calls');
    },
    (r: Reply) => {
      r.text('Framed!');
      r.finish();
    },
  );
  await page.getByLabel('Ask').selectOption({ label: 'Ada' });
  await page.getByLabel('Message').fill('Make me a map');
  await page.keyboard.press('Enter');
  await page.locator('article.message.npc', { hasText: 'Framed!' }).waitFor();
  const replies = page.locator('article.message.npc');
  await expect.poll(() => replies.count()).toBe(2);
  expect(await replies.nth(0).locator('.speaker').textContent()).toBe('Ada');
  expect(await replies.nth(1).locator('.speaker').textContent()).toBe('Bo');
  const bash = replies.nth(0).locator('.tool', { hasText: 'bash' });
  expect(await bash.getAttribute('data-tool-state')).toBe('done');
  await bash.getByText('Result').click();
  expect(await bash.locator('pre').last().textContent()).toContain('mapped');
}, 60_000);
