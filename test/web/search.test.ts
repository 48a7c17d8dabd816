import { expect, it } from 'vitest';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { setupConversation } from '../support/turns.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

it('the search box finds a word in an old turn and opens the Conversation at that turn, marked', async () => {
  const { page, cookie } = browser;
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Ada' }]);
  await app.db.sql`update conversations set title = 'Airships' where id = ${conversationId}`;
  // The turn sought, then 150 newer ones: three pages back from the newest.
  await app.db
    .sql`insert into messages (conversation_id, role, text, parts, status) values (${conversationId},
    'player', 'Where did the zeppelin land?', ${app.db.sql.json([{ type: 'text', text: 'Where did the zeppelin land?' }])}, 'complete')`;
  const [sought] = await app.db.sql<{ id: string }[]>`select id from messages where text like '%zeppelin%'`;
  await app.db.sql`insert into messages (conversation_id, role, text, parts, status)
    select ${conversationId}, 'player', 'turn ' || i, jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'turn ' || i)),
      'complete' from generate_series(1, 150) i`;

  await page.goto(`${app.url}/`);
  await page.getByLabel('Search your conversations').fill('zeppel');
  const hit = page.locator('.search-hit').first();
  await hit.waitFor();
  expect(await hit.locator('mark').textContent()).toBe('zeppelin');
  expect(await hit.locator('.search-title').textContent()).toBe('Airships');
  await shoot(page, 'search-results');
  await hit.locator('a').click();
  await page.waitForURL(new RegExp(`/c/${conversationId}\\?at=${sought!.id}`));
  const focused = page.locator('.virtual-row.focused article.message');
  await focused.waitFor({ timeout: 15_000 });
  expect(await focused.getAttribute('data-message-id')).toBe(sought!.id);
  expect(await focused.isVisible()).toBe(true);
  await shoot(page, 'search-opened-at-turn');
});
