import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type Browser, openBrowser, shoot } from '../support/browser.ts';

const ADMIN = 'did:plc:webplayersadmin0000000000';
let app: TestApp;
let browser: Browser;
let spender: { did: string; playerId: string; cookie: string };
let lapsed: { did: string; playerId: string };

beforeAll(async () => {
  app = await startTestApp({ adminDids: [ADMIN] });
  const { cookie } = await app.signIn(ADMIN);
  spender = await app.signIn();
  lapsed = await app.signIn();
  // Today's tokens, and some from forty days ago, which are in no month's figure shown today.
  await app.db.sql`insert into daily_spend (day, player_id, tokens) values
    ((now() at time zone 'utc')::date, ${spender.playerId}, 12345),
    ((now() at time zone 'utc')::date - 40, ${spender.playerId}, 999),
    ((now() at time zone 'utc')::date - 40, ${lapsed.playerId}, 777)`;
  browser = await openBrowser();
  await browser.context.addCookies([
    { name: 'av_session', value: cookie.split('=')[1]!, url: app.url, httpOnly: true, sameSite: 'Lax' },
  ]);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

it("an admin sees each Player's spending, blocks one from the Village page and unblocks them", async () => {
  const { page } = browser;
  await page.goto(`${app.url}/village`);
  const panel = page.getByRole('region', { name: 'Players' });
  const row = panel.locator(`.spending tr[data-did="${spender.did}"]`);
  await row.waitFor();
  expect(await row.locator('td').allTextContents()).toEqual(
    expect.arrayContaining([(12345).toLocaleString('en-US'), (12345).toLocaleString('en-US')]),
  );
  // Spent nothing this month: not listed.
  expect(await panel.locator(`.spending tr[data-did="${lapsed.did}"]`).count()).toBe(0);

  await row.getByRole('button', { name: 'Review' }).click();
  expect(await panel.getByLabel('Player (DID)').inputValue()).toBe(spender.did);
  await panel.getByLabel(/^Reason/).fill('Runaway spending');
  await panel.getByRole('button', { name: 'Block from starting turns' }).click();
  const block = panel.locator('.blocks .mod-item.active', { hasText: spender.did });
  await block.getByRole('button', { name: 'Unblock' }).waitFor();
  await row.getByText('(blocked)').waitFor();
  expect(await turnRefusal()).toBe('PLAYER_BLOCKED');
  await shoot(page, 'players-blocked');

  await panel.getByLabel(/^Reason/).fill('Talked it over');
  await block.getByRole('button', { name: 'Unblock' }).click();
  await panel.locator('.blocks .mod-item.lifted', { hasText: 'Talked it over' }).waitFor();
  // Free to start turns again: refused now only for the Conversation that does not exist.
  expect(await turnRefusal()).toBe('NOT_FOUND');
  await shoot(page, 'players-unblocked');
});

/** The code the spender's turn is refused with (in a Conversation that does not exist: a block is judged first). */
async function turnRefusal(): Promise<string> {
  const res = await app.api(`/api/conversations/${crypto.randomUUID()}/messages`, {
    cookie: spender.cookie,
    body: { text: 'Hello?' },
  });
  return ((await res.json()) as { error: { code: string } }).error.code;
}

it("only an admin sees Players' spending", async () => {
  expect((await app.api('/api/admin/spending', { cookie: spender.cookie })).status).toBe(403);
  expect((await app.api('/api/admin/spending')).status).toBe(401);
});
