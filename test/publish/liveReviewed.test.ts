import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../src/log/index.ts';
import { publicationLease } from '../../src/publish/index.ts';
import { shoot } from '../support/browser.ts';
import { textScript } from '../support/fakeProvider.ts';
import { holdPublication } from '../support/leases.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { publishedMessages } from '../support/publication.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';
import { until } from '../support/until.ts';

// Issue 24: live publishing sends only turns that extend the path the Player reviewed and published; a
// held-back question holds its replies; a reply whose server died gets its hold-back window like any other.
let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };
/** The server's publishing lines (kept to say what happened should a wait time out). */
const publishLog: string[] = [];
beforeAll(async () => {
  local = await startLocalApp({
    logger: createLogger({
      level: 'warn',
      destination: {
        write: (line: string) => {
          if (line.includes('"subsystem":"publish"')) publishLog.push(line.slice(0, 2000));
        },
      },
    }),
  });
  alice = await local.signInAs('alice.test');
}, 120_000);
afterAll(() => local?.close());

const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
  local.app.api(path, { ...init, cookie: alice.cookie });
const say = async (c: string, text: string, reply: string, branchFrom?: { parentId: string | null }) => {
  local.app.fake.enqueue(textScript(reply));
  const res = await api(`/api/conversations/${c}/messages`, {
    body: { text, ...(branchFrom ? { branchFrom } : {}) },
  });
  expect(res.status).toBe(200);
  await collectFrames(res);
};
const path = async (c: string) =>
  (
    (await (await api(`/api/conversations/${c}?limit=200`)).json()) as {
      messages: { id: string; text: string }[];
    }
  ).messages;
/** Publishes as the publish page does: with the turns it showed. */
const publishReviewed = async (c: string, choices: Record<string, { withheld?: boolean }> = {}) => {
  const res = await api(`/api/conversations/${c}/publication`, {
    method: 'PUT',
    body: { choices, path: (await path(c)).map((m) => m.id) },
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { uri: string }).uri;
};
const goLive = async (c: string, delaySeconds: number) =>
  expect(
    (
      await api(`/api/conversations/${c}/publication/live`, {
        method: 'PUT',
        body: { live: true, delaySeconds },
      })
    ).status,
  ).toBe(204);
const published = (uri: string) => publishedMessages(local.app.running.localnet!.pdsUrl, alice.did, uri);
/** What a live wait that timed out saw: the publication's live state and the records on the PDS. */
const liveState = (c: string, uri: string) => async () =>
  JSON.stringify({
    publication: await local.app.db.sql`select status, error, live, live_due_at, live_turn_ended_at,
      live_failures, now() as now from publications where conversation_id = ${c}`,
    onPds: (await published(uri)).map((r) => r.text ?? (r.withheld ? '(withheld)' : '?')),
    log: publishLog.slice(-5),
  });
const publication = async (c: string) =>
  (await (await api(`/api/conversations/${c}/publication`)).json()) as {
    publication: { livePaused: boolean };
    draft: { choices: Record<string, { withheld?: boolean }> };
  };

/**
 * Holds the Conversation's publication lease (as another change to it would), in the app's own line, so the
 * next append, once due, waits for it; `passAppend` then lets that append through and returns once it has
 * finished.
 */
async function gate(c: string) {
  const leases = local.app.running.leases;
  const holder = await holdPublication(leases, c);
  return {
    async passAppend() {
      await until('the append to wait for the lease', async () => leases.waiting(publicationLease(c)) > 0);
      await holder.release();
      // In line after the append, which waited first: it has finished once this is had.
      await (await holdPublication(leases, c)).release();
    },
  };
}

it('looking at another branch pauses live publishing: nothing un-reviewed goes out, nothing published goes, until published again', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Ada' }]);
  await say(c, 'My SSN is 078-05-1120, keep it safe', 'Kept: 078-05-1120.');
  const [secret] = await path(c);
  // The Player edits the first Message: a branch of its own, shown, reviewed and published.
  await say(c, 'Where do tides come from?', 'The moon pulls the sea.', { parentId: null });
  const uri = await publishReviewed(c);
  const reviewed = await published(uri);
  expect(reviewed.map((r) => r.text)).toEqual(['Where do tides come from?', 'The moon pulls the sea.']);
  await goLive(c, 4);
  const door = await gate(c);
  await say(c, 'And the sun?', 'It pulls too, less.');
  const [before] = await local.app.db
    .sql`select live_turn_ended_at as t from publications where conversation_id = ${c}`;
  // Within the delay, the Player merely looks at the other branch (‹1/2›).
  expect((await api(`/api/conversations/${c}/branch`, { body: { messageId: secret!.id } })).status).toBe(204);
  // The turns now shown get their hold-back window from the switch.
  const [after] = await local.app.db
    .sql`select live_turn_ended_at as t from publications where conversation_id = ${c}`;
  expect(after!.t.getTime()).toBeGreaterThan(before!.t.getTime());
  expect((await publication(c)).publication.livePaused).toBe(true);
  await door.passAppend();
  // Nothing of the branch shown went out, and the reviewed records were neither deleted nor rewritten.
  expect(await published(uri)).toEqual(reviewed);

  // The Player sees why, in the Conversation and on the publish page.
  const { page } = local.browser;
  await page.goto(`${local.app.url}/c/${c}`);
  await page.locator('.live-banner.paused', { hasText: 'Live publishing paused' }).waitFor();
  await shoot(page, 'live-paused-banner');
  await page.getByRole('link', { name: 'Review and publish' }).click();
  await page.locator('.live-paused', { hasText: 'Review and publish again to resume' }).waitFor();
  await shoot(page, 'live-paused-settings');

  // Back on the reviewed branch: the turn that extends it follows, after its window.
  const back = (
    await local.app.db.sql`select id from messages where conversation_id = ${c}
    and text = 'Where do tides come from?'`
  )[0]!.id as string;
  expect((await api(`/api/conversations/${c}/branch`, { body: { messageId: back } })).status).toBe(204);
  expect((await publication(c)).publication.livePaused).toBe(false);
  // Within the delay and a retry's wait, should the PDS fail an append once (ADR 0077).
  await until('the new turn', async () => (await published(uri)).length === 4, 45_000, liveState(c, uri));
  expect((await published(uri)).map((r) => r.text)).toEqual([
    'Where do tides come from?',
    'The moon pulls the sea.',
    'And the sun?',
    'It pulls too, less.',
  ]);

  // Reviewed and published again on the other branch (its secret withheld): live follows that branch now.
  await api(`/api/conversations/${c}/branch`, { body: { messageId: secret!.id } });
  const [q, a] = await path(c);
  await publishReviewed(c, { [q!.id]: { withheld: true }, [a!.id]: { withheld: true } });
  expect((await publication(c)).publication.livePaused).toBe(false);
  await say(c, 'What is the weather?', 'Sunny.');
  await until(
    'the turn on the branch published again',
    async () => (await published(uri)).length === 4,
    45_000,
    liveState(c, uri),
  );
  const out = await published(uri);
  expect(out.map((r) => r.withheld ?? false)).toEqual([true, true, false, false]);
  expect(out.slice(2).map((r) => r.text)).toEqual(['What is the weather?', 'Sunny.']);
  expect(JSON.stringify(out)).not.toContain('078-05-1120');
}, 150_000);

it('a held-back question holds its reply, until the Player releases the reply on the publish page', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Bo' }]);
  await say(c, 'Hello', 'Hi.');
  const uri = await publishReviewed(c);
  await goLive(c, 3);
  // The reply is still being written when the Player holds their question back.
  local.app.fake.enqueue(async (r) => {
    r.text('Your code is ');
    await r.wait(1500);
    r.text('4411.');
    r.finish();
  });
  const streaming = api(`/api/conversations/${c}/messages`, { body: { text: 'What was my door code?' } });
  const question = await until('the question', async () =>
    (await path(c)).find((m) => m.text === 'What was my door code?'),
  );
  expect(
    (await api(`/api/conversations/${c}/publication/hold`, { body: { messageId: question.id } })).status,
  ).toBe(204);
  await collectFrames(await streaming);
  const reply = (await path(c)).at(-1)!;
  expect(reply.text).toBe('Your code is 4411.');
  // The publish page shows the reply held, to be released there if the Player wants.
  expect((await publication(c)).draft.choices[reply.id]?.withheld).toBe(true);
  await until('the held turn', async () => (await published(uri)).length === 4);
  const out = await published(uri);
  expect(out.slice(2)).toEqual([
    expect.objectContaining({ withheld: true }),
    expect.objectContaining({ withheld: true }),
  ]);
  expect(JSON.stringify(out)).not.toContain('4411');

  // Released explicitly on the publish page: the reply goes out, the question stays a hole.
  await publishReviewed(c, { [question.id]: { withheld: true }, [reply.id]: { withheld: false } });
  expect((await published(uri)).slice(2).map((r) => r.text ?? null)).toEqual([null, 'Your code is 4411.']);
}, 60_000);

it('a reply whose server died is settled interrupted and then waits its hold-back window, like any turn', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Cy' }]);
  await say(c, 'One', 'Uno.');
  const uri = await publishReviewed(c);
  await goLive(c, 4);
  await say(c, 'Two', 'Dos, and a secret: 4411');
  // Its server (instance 1, never registered here) died mid-reply, holding the turn; an append made due by an
  // earlier turn, long over, falls due now.
  await local.app.db.sql`update messages set status = 'streaming', instance_id = 1
    where conversation_id = ${c} and text like 'Dos%'`;
  await local.app.db.sql`update conversations set turn_owner = 1 where id = ${c}`;
  await local.app.db.sql`update publications set live_due_at = now(),
    live_turn_ended_at = now() - interval '1 hour' where conversation_id = ${c}`;
  const reply = (await path(c)).at(-1)!;
  await until('the reply settled interrupted', async () => {
    const [m] = await local.app.db.sql`select status from messages where id = ${reply.id}`;
    return m!.status === 'interrupted';
  });
  // The append that settled it has not sent it: it can still be held back.
  expect(
    (await api(`/api/conversations/${c}/publication/hold`, { body: { messageId: reply.id } })).status,
  ).toBe(204);
  await until('the window to pass', async () => (await published(uri)).length === 4);
  const out = await published(uri);
  expect(out.map((r) => r.text ?? null)).toEqual(['One', 'Uno.', 'Two', null]);
  expect(out[3]).toMatchObject({ withheld: true });
  expect(JSON.stringify(out)).not.toContain('4411');
}, 60_000);

it('settling a dead reply anywhere else (here the publish page) starts its hold-back window too', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Di' }]);
  await say(c, 'One', 'Uno.');
  await publishReviewed(c);
  await goLive(c, 600);
  await say(c, 'Two', 'Dos.');
  await local.app.db.sql`update messages set status = 'streaming', instance_id = 1
    where conversation_id = ${c} and text = 'Dos.'`;
  await local.app.db.sql`update publications set live_due_at = null,
    live_turn_ended_at = now() - interval '1 hour' where conversation_id = ${c}`;
  expect((await api(`/api/conversations/${c}/publication/preview`, { body: {} })).status).toBe(200);
  const [p] = await local.app.db
    .sql`select live_due_at, live_turn_ended_at > now() - interval '1 minute' as fresh
    from publications where conversation_id = ${c}`;
  expect(p!.fresh).toBe(true);
  expect(p!.live_due_at).not.toBeNull();
}, 60_000);

it('regenerating a published reply pauses live publishing too: the published reply is not replaced', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Ed' }]);
  await say(c, 'Name a colour', 'Blue.');
  const uri = await publishReviewed(c);
  const before = await published(uri);
  await goLive(c, 1);
  const door = await gate(c);
  local.app.fake.enqueue(textScript('Red, and my password is hunter2.'));
  await collectFrames(await api(`/api/conversations/${c}/regenerate`, { body: {} }));
  await door.passAppend();
  expect(await published(uri)).toEqual(before);
  expect((await publication(c)).publication.livePaused).toBe(true);
}, 60_000);
