import { TID } from '@atproto/common-web';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { indexRecords } from '../../src/appview/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type Browser, openBrowser, shoot } from '../support/browser.ts';

const AUTHOR = 'did:plc:weblabelsauthor000000000';
const LABELER = 'did:web:labeler.example';
const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
let app: TestApp;
let browser: Browser;
let rkey: string;
let uri: string;

beforeAll(async () => {
  app = await startTestApp();
  browser = await openBrowser();
  rkey = TID.nextStr();
  uri = `at://${AUTHOR}/click.aligned.chat.session/${rkey}`;
  await indexRecords(app.db.sql, AUTHOR, [
    {
      collection: 'click.aligned.chat.session',
      rkey,
      cid: CID,
      record: {
        $type: 'click.aligned.chat.session',
        title: 'Storm damage',
        createdAt: '2026-11-01T00:00:00.000Z',
      },
    },
    {
      collection: 'click.aligned.chat.message',
      rkey: TID.nextStr(),
      cid: CID,
      record: {
        $type: 'click.aligned.chat.message',
        session: uri,
        role: 'user',
        text: 'What did the storm leave of the harbour?',
        createdAt: '2026-11-01T00:00:00.000Z',
      },
    },
  ]);
  await app.db
    .sql`insert into index_actors (did, handle, verified_at) values (${AUTHOR}, 'author.test', now())
    on conflict (did) do update set handle = excluded.handle, verified_at = now()`;
  // A `!warn` as the follower stores one once its signature verified (test/labels covers that path).
  await app.db.sql`insert into labels (src, uri, val, cts) values (${LABELER}, ${uri}, '!warn', now())`;
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

it("a `!warn` label stands in front of a thread's turns until the reader chooses to see them", async () => {
  const { page } = browser;
  await page.goto(`${app.url}/profile/${AUTHOR}/thread/${rkey}`);
  const notice = page.getByRole('alert', { name: 'Content warning' });
  await notice.waitFor();
  expect(await notice.textContent()).toContain('labelled this conversation: a warning');
  expect(await notice.textContent()).toContain(LABELER);
  // The title stays; the turns are not on the page until the reader clicks through.
  await page.getByRole('heading', { name: 'Storm damage' }).waitFor();
  expect(await page.getByText('What did the storm leave of the harbour?').count()).toBe(0);
  await shoot(page, 'label-warning');

  await notice.getByRole('button', { name: 'Show the conversation' }).click();
  await page.getByText('What did the storm leave of the harbour?').waitFor();
  expect(await page.getByRole('alert', { name: 'Content warning' }).count()).toBe(0);
  await shoot(page, 'label-warning-shown');
});

it("a content label on one turn stands in that turn's place; a turn a labeler hid is a hole that says so", async () => {
  const thread = TID.nextStr();
  const session = `at://${AUTHOR}/click.aligned.chat.session/${thread}`;
  const [calm, graphic, hidden] = [TID.nextStr(), TID.nextStr(), TID.nextStr()];
  const turn = (rkey: string, role: string, text: string) => ({
    collection: 'click.aligned.chat.message',
    rkey,
    cid: CID,
    record: {
      $type: 'click.aligned.chat.message',
      session,
      role,
      text,
      createdAt: '2026-11-01T00:00:00.000Z',
    },
  });
  await indexRecords(app.db.sql, AUTHOR, [
    {
      collection: 'click.aligned.chat.session',
      rkey: thread,
      cid: CID,
      record: {
        $type: 'click.aligned.chat.session',
        title: 'The wreck',
        createdAt: '2026-11-01T00:00:00.000Z',
      },
    },
    turn(calm, 'user', 'What was found at the wreck?'),
    turn(graphic, 'assistant', 'The divers described the bodies in detail.'),
    turn(hidden, 'user', 'Something a labeler hid.'),
  ]);
  const messageUri = (rkey: string) => `at://${AUTHOR}/click.aligned.chat.message/${rkey}`;
  await app.db.sql`insert into labels (src, uri, val, cts) values
    (${LABELER}, ${messageUri(graphic)}, 'graphic-media', now()), (${LABELER}, ${messageUri(hidden)}, '!hide', now())`;

  const { page } = browser;
  await page.goto(`${app.url}/profile/${AUTHOR}/thread/${thread}`);
  await page.getByText('What was found at the wreck?').waitFor();
  // No notice in front of the thread: only the labelled turn has one, in its place.
  expect(await page.getByRole('alert', { name: 'Content warning' }).count()).toBe(0);
  const notice = page.locator(`[data-rkey="${graphic}"]`).getByRole('note', { name: 'Content warning' });
  expect(await notice.textContent()).toContain('labelled this turn: graphic media');
  expect(await page.getByText('The divers described the bodies in detail.').count()).toBe(0);
  await page.getByText('a moderation service this instance follows hid it').waitFor();
  expect(await page.getByText('Something a labeler hid.').count()).toBe(0);
  await shoot(page, 'label-turn');
  await notice.getByRole('button', { name: 'Show this turn' }).click();
  await page.getByText('The divers described the bodies in detail.').waitFor();
  await shoot(page, 'label-turn-shown');
});
