import { TID } from '@atproto/common-web';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { indexRecords } from '../../src/appview/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type Browser, openBrowser, shoot } from '../support/browser.ts';

const ADMIN = 'did:plc:webmoderationadmin000000';
const AUTHOR = 'did:plc:webmoderationauthor00000';
const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
let app: TestApp;
let browser: Browser;
let uri: string;

beforeAll(async () => {
  app = await startTestApp({ adminDids: [ADMIN] });
  const { cookie } = await app.signIn(ADMIN);
  browser = await openBrowser();
  await browser.context.addCookies([
    { name: 'av_session', value: cookie.split('=')[1]!, url: app.url, httpOnly: true, sameSite: 'Lax' },
  ]);
  const rkey = TID.nextStr();
  uri = `at://${AUTHOR}/click.aligned.chat.session/${rkey}`;
  await indexRecords(app.db.sql, AUTHOR, [
    {
      collection: 'click.aligned.chat.session',
      rkey,
      cid: CID,
      record: { $type: 'click.aligned.chat.session', title: 'Maps', createdAt: '2026-11-01T00:00:00.000Z' },
    },
  ]);
  await app.db
    .sql`insert into index_actors (did, handle, verified_at) values (${AUTHOR}, 'author.test', now())
    on conflict (did) do update set handle = excluded.handle, verified_at = now()`;
  // A reader's report, for the list.
  expect((await app.api('/api/reader/reports', { body: { uri, reason: 'Looks like spam' } })).status).toBe(
    201,
  );
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const served = async () =>
  (await app.api(`/xrpc/click.aligned.chat.getThread?uri=${encodeURIComponent(uri)}`)).status === 200;

it('an admin hides a reported thread from the Village page and shows it again', async () => {
  const { page } = browser;
  expect(await served()).toBe(true);
  await page.goto(`${app.url}/village`);
  const panel = page.getByRole('region', { name: 'Moderation' });
  await panel.waitFor();
  // From the report to the form, with a reason, then Hide.
  await panel
    .locator('.reports .mod-item', { hasText: 'Looks like spam' })
    .getByRole('button', { name: 'Review' })
    .click();
  expect(await panel.getByLabel('Thread (at://… URI) or author (DID)').inputValue()).toBe(uri);
  await panel.getByLabel(/^Reason/).fill('Spam, reported by a reader');
  await panel.getByRole('button', { name: 'Hide' }).click();
  const row = panel.locator('.takedowns .mod-item', { hasText: uri });
  await row.getByRole('button', { name: 'Show again' }).waitFor();
  await expect.poll(served).toBe(false);
  await shoot(page, 'moderation-hidden');

  await panel.getByLabel(/^Reason/).fill('Reviewed: not spam');
  await row.getByRole('button', { name: 'Show again' }).click();
  await panel.locator('.takedowns .mod-item.lifted', { hasText: 'Reviewed: not spam' }).waitFor();
  expect(await served()).toBe(true);
  await shoot(page, 'moderation-restored');
});
