import { expect, it } from 'vitest';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { textScript, words } from '../support/fakeProvider.ts';
import { setupConversation } from '../support/turns.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

// Issue 27: a reply the Provider cut at its output limit says so, and Continue asks the NPC to go on.
it('a reply cut at the output limit says so, and Continue gets the rest in a new reply', async () => {
  const { page, cookie } = browser;
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }]);
  await page.goto(`${app.url}/c/${conversationId}`);
  const cut = 'The tides of Brest, hour by hour: at six the water is high, at noon';
  app.fake.enqueue((r) => {
    for (const w of words(cut)) r.text(w);
    r.finish('length', { prompt_tokens: 20, completion_tokens: 16 });
  });
  await page.locator('#composer-text').fill('Tell me the tides, hour by hour.');
  await page.getByRole('button', { name: 'Send' }).click();

  const replies = page.locator('.transcript .virtual article.message.npc');
  const first = replies.filter({ hasText: 'at six the water is high' });
  await first.getByRole('button', { name: 'Continue' }).waitFor();
  expect(await first.getAttribute('data-status')).toBe('truncated');
  expect(await first.locator('p.status').textContent()).toContain('Cut at the output limit.');
  await shoot(page, 'continue-truncated');

  app.fake.enqueue(textScript('it is low, and at six in the evening high again.'));
  await first.getByRole('button', { name: 'Continue' }).click();
  await replies.filter({ hasText: 'high again.' }).waitFor();
  // The NPC was asked to go on, with the cut reply in the history it read.
  const sent = app.fake.requests.at(-1)!.body.messages;
  expect(JSON.stringify(sent.at(-1))).toContain('Continue from where you were cut off.');
  expect(JSON.stringify(sent)).toContain(cut);
  // The cut reply still says so; Continue is offered only on the newest Message, now complete.
  expect(await first.locator('p.status').textContent()).toContain('Cut at the output limit.');
  await expect.poll(() => page.getByRole('button', { name: 'Continue' }).count()).toBe(0);
  expect(await replies.last().getAttribute('data-status')).toBe('complete');
  await shoot(page, 'continue-continued');
});
