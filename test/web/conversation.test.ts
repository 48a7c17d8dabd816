import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { OUTPUT_DIR } from '../support/browser.ts';
import { textScript, words } from '../support/fakeProvider.ts';
import { setupConversation } from '../support/turns.ts';
import { openSignedIn, partsOnPage } from '../support/webapp.ts';

let app: TestApp;
let browser: Awaited<ReturnType<typeof openSignedIn>>;
beforeAll(async () => {
  app = await startTestApp();
  browser = await openSignedIn(app);
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.url });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

async function openConversation(npc: Record<string, unknown> = { name: 'Ada', jobTitle: 'Librarian' }) {
  const { conversationId } = await setupConversation(app, browser.cookie, [npc]);
  await browser.page.goto(`${app.url}/c/${conversationId}`);
  await browser.page.getByLabel('Message').waitFor();
  return conversationId;
}

async function send(text: string) {
  const box = browser.page.getByLabel('Message');
  await box.fill(text);
  await box.press('Enter');
}

const replyText = () =>
  browser.page.locator('article.message.npc').last().locator('.markdown').allTextContents();

describe('the conversation page', () => {
  it('shows the Player Message at once and the reply arriving progressively', async () => {
    await openConversation();
    app.fake.enqueue(async (r) => {
      for (const w of words('One two three four five six seven eight nine ten.')) {
        r.text(w);
        await r.wait(60);
      }
      r.finish();
    });
    await send('Count for me');
    await browser.page.locator('article.message.player', { hasText: 'Count for me' }).waitFor();
    const seen: string[] = [];
    for (let i = 0; i < 40; i++) {
      seen.push((await replyText()).join(''));
      if (seen.at(-1)?.includes('ten.')) break;
      await browser.page.waitForTimeout(25);
    }
    const partial = seen.filter((s) => s.length > 0 && !s.includes('ten.'));
    expect(partial.length).toBeGreaterThan(1);
    expect(new Set(partial).size).toBeGreaterThan(1);
    await expect
      .poll(async () => (await replyText()).join(''))
      .toBe('One two three four five six seven eight nine ten.');
  });

  it('Stop keeps the partial reply, and it is still there after a reload', async () => {
    await openConversation();
    app.fake.enqueue(async (r) => {
      for (let i = 0; i < 200 && !r.clientGone; i++) {
        r.text(`w${i} `);
        await r.wait(40);
      }
      r.finish();
    });
    await send('Talk until I stop you');
    await expect
      .poll(async () => (await replyText()).join('').length, { timeout: 10_000 })
      .toBeGreaterThan(10);
    await browser.page.getByRole('button', { name: 'Stop' }).click();
    const stopped = browser.page.locator('article.message.npc[data-status=stopped]');
    await stopped.waitFor();
    const before = await partsOnPage(browser.page);
    await browser.page.reload();
    await stopped.waitFor();
    expect(await partsOnPage(browser.page)).toEqual(before);
    expect(before[0]![0]![1]).toMatch(/^w0 w1 /);
  }, 60_000);

  it('a reloaded transcript equals the streamed one, Part for Part', async () => {
    await openConversation({ name: 'Ada', thinking: true });
    app.fake.enqueue(async (r) => {
      r.reasoning('Considering the shelves.');
      r.text('Let me look that up. ');
      r.toolCallStart(0, 'call_1', 'catalogue_search', '{"query":"maps"}');
      r.text('Found **three** maps.');
      await r.wait(700); // a window to read the streamed page before the stream ends
      r.finish();
    });
    app.fake.enqueue((r) => r.finish()); // the step after the failed call adds nothing
    await send('Any maps?');
    await expect.poll(async () => (await replyText()).join('')).toContain('three maps.');
    const streamed = await partsOnPage(browser.page, '.live article.message.npc');
    await browser.page.locator('.live article').waitFor({ state: 'detached' });
    await browser.page.reload();
    await browser.page.locator('article.message.npc').waitFor();
    const reloaded = await partsOnPage(browser.page);
    // The tool call no tool answered is settled as failed when the reply ends; everything else is identical.
    expect(reloaded[0]!.map(([k, t]) => [k.replace(/tool:\w+/, 'tool'), t])).toEqual(
      streamed[0]!.map(([k, t]) => [k.replace(/tool:\w+/, 'tool'), t]),
    );
    expect(reloaded[0]!.map(([k]) => k)).toEqual(['reasoning', 'text', 'tool:failed', 'text']);
  });

  it('Regenerate replaces the last reply without repeating the Player Message', async () => {
    await openConversation();
    app.fake.enqueue(textScript('First answer.'), textScript('Second answer.'));
    await send('Once more?');
    await expect.poll(async () => (await replyText()).join('')).toBe('First answer.');
    await browser.page.getByRole('button', { name: 'Regenerate' }).click();
    await expect.poll(async () => (await replyText()).join('')).toBe('Second answer.');
    expect(await browser.page.locator('article.message.player').count()).toBe(1);
    expect(await browser.page.locator('article.message.npc').count()).toBe(1);
  });

  it('renders a failed tool call as failed', async () => {
    await openConversation();
    app.fake.enqueue((r) => {
      r.toolCallStart(0, 'call_x', 'run_command', '{"cmd":"ls"}');
      r.finish('tool_calls');
    });
    await send('List files');
    const tool = browser.page.locator('.tool[data-tool-state=failed]');
    await tool.waitFor();
    expect(await tool.locator('.tool-name').textContent()).toBe('run_command');
    expect(await tool.locator('.tool-state').textContent()).toBe('failed');
  });

  it('keeps reasoning collapsed and out of the copied text', async () => {
    await openConversation({ name: 'Ada', thinking: true });
    app.fake.enqueue((r) => {
      r.reasoning('SECRET REASONING');
      r.text('The visible answer.');
      r.finish();
    });
    await send('Think, then answer');
    const reasoning = browser.page.locator('article.message.npc details.reasoning').last();
    await reasoning.waitFor();
    await browser.page.locator('article.message.npc footer').last().waitFor();
    expect(await reasoning.evaluate((d) => d.hasAttribute('open'))).toBe(false);
    expect(await reasoning.locator('.reasoning-text').isVisible()).toBe(false);
    await browser.page.locator('article.message.npc').last().getByRole('button', { name: 'Copy' }).click();
    const copied = await browser.page.evaluate(() =>
      (
        globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
      ).navigator.clipboard.readText(),
    );
    expect(copied).toBe('The visible answer.');
  });

  it("shows a Provider error as the error frame's message", async () => {
    await openConversation();
    app.fake.enqueue((r) => {
      r.text('Starting… ');
      r.streamError('upstream overloaded, try later');
    });
    await send('Hello');
    const failed = browser.page.locator('article.message.npc[data-status=failed] .status');
    await failed.waitFor();
    expect(await failed.textContent()).toContain('upstream overloaded, try later');
    await browser.page.screenshot({ path: path.join(OUTPUT_DIR, 'conversation.png'), fullPage: true });
  });

  it('shows a refused turn as the server message, in place', async () => {
    const conversationId = await openConversation();
    await app.db.sql`update npcs set provider = 'anthropic', model = 'x' where id in
      (select npc_id from conversation_participants where conversation_id = ${conversationId})`;
    await send('Anyone?');
    const alert = browser.page.getByRole('alert').filter({ hasText: 'no API key' });
    await alert.waitFor();
  });

  it('nothing typed is lost: a refused send keeps the words, a draft survives a reload, an accepted one clears', async () => {
    const conversationId = await openConversation();
    const npcs = app.db
      .sql`select npc_id from conversation_participants where conversation_id = ${conversationId}`;
    await app.db.sql`update npcs set provider = 'anthropic', model = 'x' where id in (${npcs})`;
    const box = browser.page.getByLabel('Message');
    await send('A long thought I would hate to type again');
    await browser.page.getByRole('alert').filter({ hasText: 'no API key' }).waitFor();
    expect(await box.inputValue()).toBe('A long thought I would hate to type again');
    await browser.page.reload();
    await box.waitFor();
    expect(await box.inputValue()).toBe('A long thought I would hate to type again');
    // The NPC gets a Provider that works: the same words go, and the box is empty after.
    await app.db.sql`update npcs set provider = null, model = null where id in (${npcs})`;
    app.fake.enqueue((r) => {
      r.text('Heard.');
      r.finish();
    });
    await box.press('Enter');
    await browser.page.locator('article.message.player', { hasText: 'A long thought' }).waitFor();
    await expect.poll(() => box.inputValue()).toBe('');
    await expect.poll(async () => (await replyText()).join('')).toBe('Heard.');
    await browser.page.reload();
    await box.waitFor();
    expect(await box.inputValue()).toBe('');
  });
});
