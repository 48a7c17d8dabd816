import { expect, it } from 'vitest';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { upload } from '../support/files.ts';
import { setupConversation } from '../support/turns.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

// The Usage page shows what the Player stores of the quota, by kind (issue 25 item 5, ADR 0053).
let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

const importReply = (chars: number) => {
  const at = new Date().toISOString();
  return fetch(`${app.running.listenUrl}/api/conversations/import`, {
    method: 'POST',
    headers: { cookie: browser.cookie, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body: JSON.stringify({
      format: 'agentsville.conversation',
      version: 2,
      conversation: { title: 'Long', createdAt: at },
      npcs: [{ name: 'Ada' }],
      messages: [
        { role: 'player', parts: [{ type: 'text', text: 'All of it.' }], status: 'complete', createdAt: at },
        {
          role: 'npc',
          npc: 0,
          parts: [{ type: 'text', text: 'x'.repeat(chars) }],
          status: 'complete',
          createdAt: at,
        },
      ],
    }),
  });
};

it('Usage shows bytes stored of the quota, by kind, and says when it is full', async () => {
  const { page, cookie } = browser;
  const { conversationId } = await setupConversation(app, cookie);
  expect((await upload(app, cookie, conversationId, 'notes.txt', Buffer.alloc(300_000, 'a'))).status).toBe(
    201,
  );
  expect((await app.api('/api/memories', { cookie, body: { text: 'Likes maps.' } })).status).toBe(201);
  expect((await importReply(900_000)).status).toBe(201);
  const { storage } = (await (await app.api('/api/usage', { cookie })).json()) as {
    storage: { messages: number; used: number };
  };

  await page.goto(`${app.url}/usage`);
  const section = page.locator('section.storage');
  await section.waitFor();
  const row = (kind: string) => section.locator('tr', { hasText: kind }).locator('td');
  expect(await row('Messages').textContent()).toBe(`${(storage.messages / 1024).toFixed(1)} KB`);
  expect(await row('Attachments').textContent()).toBe('293.0 KB');
  expect(await row('Memory').textContent()).toBe('11 bytes');
  expect(await row('Sandbox files').textContent()).toBe('0 bytes');
  expect(await section.locator('p').textContent()).toBe(
    `You store ${(storage.used / 1024 / 1024).toFixed(1)} MB of 200.0 MB.`,
  );
  expect(await section.locator('meter').getAttribute('value')).toBe(String(storage.used));
  await shoot(page, 'usage-storage');

  // The Village's quota lowered below what is stored: the page says it is full and what that means.
  await app.db.sql`update village_settings set player_storage_mb = 1`;
  try {
    await page.reload();
    await section.locator('p', { hasText: 'full' }).waitFor();
    expect(await section.locator('p').textContent()).toMatch(
      /of 1\.0 MB: full\. New Messages, uploads and imports are refused/,
    );
    await shoot(page, 'usage-storage-full');
  } finally {
    await app.db.sql`update village_settings set player_storage_mb = 200`;
  }
});
