import { afterAll, beforeAll, expect, it } from 'vitest';
import { Leases } from '../../src/db/index.ts';
import { LIVE_MAX_FAILURES } from '../../src/publish/live.ts';
import { shoot } from '../support/browser.ts';
import { textScript } from '../support/fakeProvider.ts';
import { holdPublication } from '../support/leases.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { publishedMessages } from '../support/publication.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';
import { until } from '../support/until.ts';

// Live publishing (issue 18): each new turn of a live Conversation is appended to its published session once
// complete, after a delay in which it can be held back; readers see it without reloading.
let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };
/**
 * The PDS answers the next `failNext` writes with a 503, as one being restarted would; `fired` counts them. The
 * writes to `hangRepo` wait until `letGo` is called, as a PDS that hangs would; `hung` counts them.
 */
const hanging: (() => void)[] = [];
const faults = {
  failNext: 0,
  fired: 0,
  hangRepo: '',
  hung: 0,
  letGo: () => {
    for (const go of hanging.splice(0)) go();
  },
};
const oauthFetch: typeof fetch = async (input, init) => {
  const req = new Request(input, init);
  if (!req.url.includes('com.atproto.repo.applyWrites')) return fetch(req);
  if (faults.failNext > 0) {
    faults.failNext--;
    faults.fired++;
    return Response.json({ error: 'InternalServerError', message: 'injected: restarting' }, { status: 503 });
  }
  if (faults.hangRepo && (await req.clone().text()).includes(`"${faults.hangRepo}"`)) {
    faults.hung++;
    await new Promise<void>((r) => hanging.push(r));
  }
  return fetch(req);
};
beforeAll(async () => {
  local = await startLocalApp({ oauthFetch, env: { LIVE_RETRY_SECONDS: '2' } });
  alice = await local.signInAs('alice.test');
  // This file sends more turns a minute than the Village allows a Player by default (20).
  await local.app.db.sql`update village_settings set turns_per_minute = 1000`;
}, 120_000);
afterAll(() => local?.close());

const api = (path: string, init: { method?: string; body?: unknown } = {}, cookie = alice.cookie) =>
  local.app.api(path, { ...init, cookie });
/** A turn of the Player (Alice unless another's cookie is given), checked to have been taken. */
const turn = async (c: string, text: string, reply: string, cookie = alice.cookie) => {
  local.app.fake.enqueue(textScript(reply));
  const res = await api(`/api/conversations/${c}/messages`, { body: { text } }, cookie);
  expect(res.status, await res.clone().text()).toBe(200);
  await collectFrames(res);
};
const published = (uri: string) => publishedMessages(local.app.running.localnet!.pdsUrl, alice.did, uri);

it('a live Conversation grows on the PDS and in an open reader; a held-back turn goes out withheld; off stops it', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Ada' }]);
  await turn(c, 'Where do tides come from?', 'The moon pulls the sea.');
  // Live needs a publication.
  expect(
    (await api(`/api/conversations/${c}/publication/live`, { method: 'PUT', body: { live: true } })).status,
  ).toBe(409);
  const res = await api(`/api/conversations/${c}/publication`, { method: 'PUT', body: { choices: {} } });
  expect(res.status).toBe(200);
  const { uri } = (await res.json()) as { uri: string };
  expect(
    (
      await api(`/api/conversations/${c}/publication/live`, {
        method: 'PUT',
        body: { live: true, delaySeconds: 1 },
      })
    ).status,
  ).toBe(204);

  // A reader has the thread open.
  const { page } = local.browser;
  const [, , did, , rkey] = uri.split('/');
  await page.goto(`${local.app.url}/profile/${did}/thread/${rkey}`);
  await page.getByText('The moon pulls the sea.').waitFor();

  // A new turn: appended within seconds, and the open reader shows it without a reload.
  const before = Date.now();
  await turn(c, 'And the sun?', 'It pulls too, less.');
  await until('the new turn on the PDS', async () =>
    (await published(uri)).some((r) => r.text === 'It pulls too, less.'),
  );
  const took = Date.now() - before;
  expect(took).toBeLessThan(15_000);
  await page.getByText('It pulls too, less.').waitFor({ timeout: 15_000 });
  await shoot(page, 'live-reader-grew');

  // Held back during the delay: published as a hole.
  await api(`/api/conversations/${c}/publication/live`, {
    method: 'PUT',
    body: { live: true, delaySeconds: 4 },
  });
  await turn(c, 'A secret question', 'A secret answer.');
  const rows = (await (await api(`/api/conversations/${c}`)).json()) as {
    messages: { id: string; text: string }[];
  };
  const answer = rows.messages.find((m) => m.text === 'A secret answer.')!;
  expect(
    (await api(`/api/conversations/${c}/publication/hold`, { body: { messageId: answer.id } })).status,
  ).toBe(204);
  const after = await until('the held-back turn', async () => {
    const r = await published(uri);
    return r.length === 6 ? r : undefined;
  });
  expect(after[4]).toMatchObject({ text: 'A secret question' });
  expect(after[5]).toMatchObject({ withheld: true });
  expect(after[5]!.text).toBeUndefined();
  expect(JSON.stringify(after)).not.toContain('A secret answer.');
  // Once out, it cannot be held back any more (withholding it is the publish page's job).
  expect(
    (await api(`/api/conversations/${c}/publication/hold`, { body: { messageId: answer.id } })).status,
  ).toBe(409);

  // The Player sees it: the banner in the Conversation, the settings on the publish page.
  await api(`/api/conversations/${c}/publication/live`, {
    method: 'PUT',
    body: { live: true, delaySeconds: 600 },
  });
  await turn(c, 'Still there?', 'Still here.');
  await page.goto(`${local.app.url}/c/${c}`);
  await page.locator('.live-banner', { hasText: '2 new turns go out in' }).waitFor();
  await shoot(page, 'live-banner');
  // One turn at a time: the reply only, then the question too.
  await page.locator('.live-banner').getByRole('button', { name: 'Hold back Ada: Still here.' }).click();
  await page.locator('.live-banner', { hasText: '1 held back' }).waitFor();
  await page.locator('.live-banner').getByRole('button', { name: 'Hold back You: Still there?' }).click();
  await page.locator('.live-banner', { hasText: '2 held back' }).waitFor();
  await shoot(page, 'live-banner-held');
  await page.goto(`${local.app.url}/c/${c}/publish`);
  await page.getByRole('button', { name: 'Stop live publishing' }).waitFor();
  await shoot(page, 'live-settings');
  await page.getByRole('button', { name: 'Stop live publishing' }).click();
  await page.getByRole('button', { name: 'Go live' }).waitFor();

  // Live off: a new turn stays here; nothing published changes.
  await api(`/api/conversations/${c}/publication/live`, { method: 'PUT', body: { live: false } });
  await turn(c, 'Off the record', 'Quietly.');
  await new Promise((r) => setTimeout(r, 3000));
  expect(await published(uri)).toEqual(after);
}, 120_000);

it('a turn still being written when its append falls due (the Player closed the tab mid-reply) goes out once it ends', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Bo' }]);
  await turn(c, 'One', 'Uno.');
  const { uri } = (await (
    await api(`/api/conversations/${c}/publication`, { method: 'PUT', body: { choices: {} } })
  ).json()) as {
    uri: string;
  };
  await api(`/api/conversations/${c}/publication/live`, {
    method: 'PUT',
    body: { live: true, delaySeconds: 0 },
  });
  local.app.fake.enqueue(async (r) => {
    r.text('Dos');
    await r.wait(3000);
    r.text('.');
    r.finish();
  });
  // The Player's tab goes away after the first words; the reply is written to its end regardless (ADR 0037).
  const controller = new AbortController();
  const res = await local.app.running.listenUrl;
  const streaming = await fetch(`${res}/api/conversations/${c}/messages`, {
    method: 'POST',
    headers: { cookie: alice.cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'Two' }),
    signal: controller.signal,
  });
  const reader = streaming.body!.getReader();
  await reader.read();
  controller.abort();
  const [row] = await local.app.db
    .sql`select status from messages where conversation_id = ${c} and role = 'npc'
    order by seq desc limit 1`;
  expect(row!.status).toBe('streaming');
  await until('every turn', async () => (await published(uri)).length === 4, 20_000);
  expect((await published(uri)).map((r) => r.text)).toEqual(['One', 'Uno.', 'Two', 'Dos.']);
}, 60_000);

it('a withheld turn on another branch stays withheld when its branch is shown and published again', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Cy' }]);
  await turn(c, 'Tell me a secret', 'The vault code is 4411.');
  const rows = (await (await api(`/api/conversations/${c}`)).json()) as {
    messages: { id: string; text: string }[];
  };
  const [ask, secret] = rows.messages;
  const { uri } = (await (
    await api(`/api/conversations/${c}/publication`, {
      method: 'PUT',
      body: { choices: { [secret!.id]: { withheld: true } } },
    })
  ).json()) as { uri: string };
  // Another branch from the question, published: the withheld reply is off the path and leaves the PDS.
  await turn(c, 'Tell me a joke', 'Why did the vault close? It was tired.');
  local.app.fake.enqueue(textScript('A harmless answer.'));
  await collectFrames(
    await api(`/api/conversations/${c}/messages`, {
      body: { text: 'Something else', branchFrom: { parentId: null } },
    }),
  );
  await api(`/api/conversations/${c}/publication`, { method: 'PUT', body: { choices: {} } });
  expect(JSON.stringify(await published(uri))).not.toContain('Tell me a secret');
  // Back to the first branch, published again: the reply is still withheld.
  expect((await api(`/api/conversations/${c}/branch`, { body: { messageId: ask!.id } })).status).toBe(204);
  await api(`/api/conversations/${c}/publication`, { method: 'PUT', body: { choices: {} } });
  const out = await published(uri);
  expect(out[0]).toMatchObject({ text: 'Tell me a secret' });
  expect(out[1]).toMatchObject({ withheld: true });
  expect(JSON.stringify(out)).not.toContain('4411');
}, 60_000);

it('turning live off waits for an append already under way, so its answer is the last word', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Ada' }]);
  await turn(c, 'Hello', 'Hi.');
  expect(
    (await api(`/api/conversations/${c}/publication`, { method: 'PUT', body: { choices: {} } })).status,
  ).toBe(200);
  await api(`/api/conversations/${c}/publication/live`, { method: 'PUT', body: { live: true } });
  // An append holds the Conversation's publication lease while it writes (here, another instance holds it).
  const elsewhere = new Leases(local.app.db.sql);
  const holder = await holdPublication(elsewhere, c);
  let answered = false;
  const off = api(`/api/conversations/${c}/publication/live`, { method: 'PUT', body: { live: false } }).then(
    (r) => {
      answered = true;
      return r;
    },
  );
  await new Promise((r) => setTimeout(r, 500));
  expect(answered).toBe(false);
  await holder.release();
  await elsewhere.close();
  expect((await off).status).toBe(204);
  const [row] = await local.app.db.sql`select live from publications where conversation_id = ${c}`;
  expect(row?.live).toBe(false);
});

it('no append takes a turn younger than the delay, even one that falls due early (a retry while a reply ran)', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Cy' }]);
  await turn(c, 'First', 'One.');
  const { uri } = (await (
    await api(`/api/conversations/${c}/publication`, { method: 'PUT', body: { choices: {} } })
  ).json()) as { uri: string };
  await api(`/api/conversations/${c}/publication/live`, {
    method: 'PUT',
    body: { live: true, delaySeconds: 4 },
  });
  await turn(c, 'Second', 'Two.');
  // An append falls due at once, as a retry scheduled while the reply streamed would (the fault, injected).
  await local.app.db.sql`update publications set live_due_at = now() where conversation_id = ${c}`;
  // Every server looks each second: the append is taken, sees the turn is younger than its delay, and waits.
  await until('the early append to be taken', async () => {
    const [p] = await local.app.db.sql`select live_due_at, live_turn_ended_at from publications
      where conversation_id = ${c}`;
    return p!.live_due_at && p!.live_due_at.getTime() >= p!.live_turn_ended_at.getTime() + 4000;
  });
  expect((await published(uri)).map((r) => r.text)).toEqual(['First', 'One.']);
  // Held back in time, the turn can still be held back; and after the delay it goes out.
  await until('the new turn', async () => (await published(uri)).length === 4, 20_000);
  expect((await published(uri)).map((r) => r.text)).toEqual(['First', 'One.', 'Second', 'Two.']);
}, 60_000);

it('many requests for one publication at once all answer: waiters never take every connection of the pool', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Di' }]);
  await turn(c, 'Hi', 'Hello.');
  expect(
    (await api(`/api/conversations/${c}/publication`, { method: 'PUT', body: { choices: {} } })).status,
  ).toBe(200);
  // Fifteen at once, more than the pool's ten connections: each waits its turn for the lock.
  const answers = await Promise.all(
    Array.from({ length: 15 }, (_, i) =>
      api(`/api/conversations/${c}/publication/live`, {
        method: 'PUT',
        body: { live: i % 2 === 0, delaySeconds: 600 },
      }),
    ),
  );
  expect(answers.map((a) => a.status)).toEqual(Array(15).fill(204));
  // And the server answers anything else as ever.
  expect((await api(`/api/conversations/${c}`)).status).toBe(200);
}, 60_000);

it('a publication waiting for its lock never holds up another: each Conversation waits on its own', async () => {
  const published = async () => {
    const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Ed' }]);
    await turn(c, 'Hi', 'Hello.');
    const res = await api(`/api/conversations/${c}/publication`, { method: 'PUT', body: { choices: {} } });
    expect(res.status, await res.clone().text()).toBe(200);
    return c;
  };
  const held: string[] = [];
  for (let i = 0; i < 4; i++) held.push(await published());
  const free = await published();
  // Four Conversations' locks are held elsewhere (another instance publishing, say): their requests wait.
  const elsewhere = new Leases(local.app.db.sql);
  const holders = await Promise.all(held.map((c) => holdPublication(elsewhere, c)));
  const waiting = held.map((c) =>
    api(`/api/conversations/${c}/publication/live`, { method: 'PUT', body: { live: true } }),
  );
  // A fifth Conversation's request is answered at once, not after theirs.
  const answer = await api(`/api/conversations/${free}/publication/live`, {
    method: 'PUT',
    body: { live: true },
  });
  expect(answer.status).toBe(204);
  await Promise.all(holders.map((h) => h.release()));
  await elsewhere.close();
  expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([204, 204, 204, 204]);
}, 60_000);

/** Publishes the Conversation as it stands and marks it live with no delay; its session's URI. */
async function publishLive(c: string, cookie = alice.cookie) {
  const res = await api(
    `/api/conversations/${c}/publication`,
    { method: 'PUT', body: { choices: {} } },
    cookie,
  );
  expect(res.status, await res.clone().text()).toBe(200);
  const { uri } = (await res.json()) as { uri: string };
  await api(
    `/api/conversations/${c}/publication/live`,
    {
      method: 'PUT',
      body: { live: true, delaySeconds: 0 },
    },
    cookie,
  );
  return uri;
}
const explain = (c: string) => async () =>
  JSON.stringify({
    faults,
    publications: await local.app.db.sql`select conversation_id = ${c} as this, status, error, live,
      live_due_at, live_failures, now() from publications where live`,
  });
const liveRow = async (c: string) =>
  (
    await local.app.db.sql<{ status: string; failures: number; dueAt: Date | null }[]>`
      select status, live_failures as failures, live_due_at as "dueAt" from publications
      where conversation_id = ${c}`
  )[0]!;

it('an append the PDS refused while it restarted is tried again after a while: the last turn goes out without another', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Fe' }]);
  await turn(c, 'One', 'Uno.');
  const uri = await publishLive(c);
  // Every attempt of the append's write fails (the writer's own five tries), so the append fails whole.
  faults.fired = 0;
  faults.failNext = 5;
  await turn(c, 'Two', 'Dos.');
  await until(
    'the failed append, counted',
    async () => (await liveRow(c)).failures === 1,
    30_000,
    explain(c),
  );
  expect(faults.fired).toBe(5);
  const failedRow = await liveRow(c);
  expect(failedRow.status).toBe('failed');
  expect(failedRow.dueAt).not.toBeNull();
  expect((await published(uri)).map((r) => r.text)).toEqual(['One', 'Uno.']);
  // The Player is told, in the Conversation and on the publish page (the retry held off while they look).
  await local.app.db.sql`update publications set live_due_at = now() + interval '10 minutes'
    where conversation_id = ${c}`;
  const { page } = local.browser;
  await page.goto(`${local.app.url}/c/${c}`);
  await page.locator('.live-banner .live-failed', { hasText: 'it is tried again then' }).waitFor();
  expect(await page.locator('.live-banner').textContent()).toContain('2 new turns go out in 10 min.');
  await shoot(page, 'live-append-failed-banner');
  await page.goto(`${local.app.url}/c/${c}/publish`);
  await page.getByText('live publishing tries again by itself').waitFor();
  await shoot(page, 'live-append-failed-publish-page');
  await page.goto('about:blank');
  await local.app.db.sql`update publications set live_due_at = now() where conversation_id = ${c}`;
  // No further turn: the retry alone sends it out, and the count starts again.
  await until('the retried append', async () => (await published(uri)).length === 4, 30_000);
  expect((await published(uri)).map((r) => r.text)).toEqual(['One', 'Uno.', 'Two', 'Dos.']);
  await until('the publication settled', async () => (await liveRow(c)).failures === 0);
  expect((await liveRow(c)).status).toBe('published');
}, 60_000);

it('past the most failures in a row an append waits for the next turn, which sends everything still due', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Gi' }]);
  await turn(c, 'One', 'Uno.');
  const uri = await publishLive(c);
  await local.app.db.sql`update publications set live_failures = ${LIVE_MAX_FAILURES - 1}
    where conversation_id = ${c}`;
  faults.fired = 0;
  faults.failNext = 5;
  await turn(c, 'Two', 'Dos.');
  await until(
    'the last failure, counted',
    async () => (await liveRow(c)).failures === LIVE_MAX_FAILURES,
    30_000,
  );
  expect(faults.fired).toBe(5);
  // Nothing is scheduled any more: no retry every hour for ever for a PDS that is gone.
  expect((await liveRow(c)).dueAt).toBeNull();
  await turn(c, 'Three', 'Tres.');
  await until('both turns', async () => (await published(uri)).length === 6, 30_000);
  expect((await published(uri)).map((r) => r.text)).toEqual(['One', 'Uno.', 'Two', 'Dos.', 'Three', 'Tres.']);
  await until('the count reset', async () => (await liveRow(c)).failures === 0);
}, 60_000);

it('a Player whose PDS hangs holds up only their own live appends: another Player’s turn goes out meanwhile', async () => {
  const bob = await local.signInAs('bob.test');
  const pds = local.app.running.localnet!.pdsUrl;
  const a = (await setupConversation(local.app, alice.cookie, [{ name: 'Hu' }])).conversationId;
  const a2 = (await setupConversation(local.app, alice.cookie, [{ name: 'Ja' }])).conversationId;
  const b = (await setupConversation(local.app, bob.cookie, [{ name: 'Io' }])).conversationId;
  await turn(a, 'One', 'Uno.');
  await turn(a2, 'One', 'Uno.');
  await turn(b, 'One', 'Uno.', bob.cookie);
  const [aliceUri, alice2Uri, bobUri] = [
    await publishLive(a),
    await publishLive(a2),
    await publishLive(b, bob.cookie),
  ];
  faults.hung = 0;
  faults.hangRepo = alice.did;
  try {
    await turn(a, 'Two', 'Dos.');
    await until('Alice’s append to wait on her PDS', async () => faults.hung > 0);
    // Alice's other Conversation falls due first, then Bob's: hers waits for her first; his goes out.
    await turn(a2, 'Two', 'Dos.');
    await turn(b, 'Two', 'Dos.', bob.cookie);
    await until('Bob’s append', async () => (await publishedMessages(pds, bob.did, bobUri)).length === 4);
    expect(faults.hung).toBe(1);
    expect(await publishedMessages(pds, alice.did, aliceUri)).toHaveLength(2);
    expect((await liveRow(a2)).dueAt).not.toBeNull();
  } finally {
    faults.hangRepo = '';
    faults.letGo();
  }
  await until('Alice’s appends', async () => {
    const [one, two] = await Promise.all([
      publishedMessages(pds, alice.did, aliceUri),
      publishedMessages(pds, alice.did, alice2Uri),
    ]);
    return one.length === 4 && two.length === 4;
  });
}, 60_000);

it('a publish the PDS failed, not live, is finished by the server itself; the page says when (ADR 0091)', async () => {
  // The browser as Alice again (a test above signed it in as Bob).
  await local.signInAs('alice.test');
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Ho' }]);
  await turn(c, 'One', 'Uno.');
  faults.fired = 0;
  faults.failNext = 5;
  const res = await api(`/api/conversations/${c}/publication`, { method: 'PUT', body: { choices: {} } });
  expect(res.status).toBe(502);
  expect(faults.fired).toBe(5);
  // Held off while the Player looks: the page says the server tries again, and when.
  await local.app.db.sql`update publications set retry_due_at = now() + interval '10 minutes'
    where conversation_id = ${c}`;
  const { page } = local.browser;
  await page.goto(`${local.app.url}/c/${c}/publish`);
  await page.getByText('The server tries again by itself at').waitFor();
  await shoot(page, 'publish-failed-retry-scheduled');
  await page.goto('about:blank');
  await local.app.db.sql`update publications set retry_due_at = now() where conversation_id = ${c}`;
  const uri = `at://${alice.did}/click.aligned.chat.session/${
    (await local.app.db.sql`select session_rkey from publications where conversation_id = ${c}`)[0]!
      .session_rkey
  }`;
  await until('the retried publish', async () => (await published(uri)).length === 2, 30_000);
  expect((await published(uri)).map((r) => r.text)).toEqual(['One', 'Uno.']);
  expect((await liveRow(c)).status).toBe('published');
}, 60_000);

it('turning live off after an append failed sends nothing more in the background: not the append left pending either', async () => {
  const { conversationId: c } = await setupConversation(local.app, alice.cookie, [{ name: 'Ka' }]);
  await turn(c, 'One', 'Uno.');
  const uri = await publishLive(c);
  faults.fired = 0;
  faults.failNext = 5;
  await turn(c, 'Two', 'Dos.');
  await until('the failed append', async () => (await liveRow(c)).failures === 1, 30_000, explain(c));
  const due = async () =>
    (await local.app.db.sql`select retry_due_at from publications where conversation_id = ${c}`)[0]!
      .retry_due_at;
  // The failed run set its own retry; the live appends ignore it while live (they retry themselves).
  expect(await due()).not.toBeNull();
  const off = await api(`/api/conversations/${c}/publication/live`, { method: 'PUT', body: { live: false } });
  expect(off.status).toBe(204);
  expect(await due()).toBeNull();
  expect((await published(uri)).map((r) => r.text)).toEqual(['One', 'Uno.']);
}, 60_000);
