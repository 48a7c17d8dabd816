import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AtpAgent } from '@atproto/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Browser, openBrowser } from '../support/browser.ts';
import { insertConversation } from '../support/conversations.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';

let local: LocalApp;
let reader: Browser;
beforeAll(async () => {
  local = await startLocalApp();
  reader = await openBrowser(); // a reader with only a link: no account
}, 120_000);
afterAll(async () => {
  await reader?.close();
  await local?.close();
});

it('a reader with only a link sees the thread as seed 001 intends, and can browse', async () => {
  const alice = await local.signInAs('alice.test');
  const { app } = local;
  const bob = local.app.running.localnet!.accounts.find((a) => a.handle === 'bob.test')!;
  const bobAgent = new AtpAgent({ service: app.running.localnet!.pdsUrl });
  await bobAgent.login({ identifier: bob.handle, password: bob.password });
  const post = await bobAgent.post({ text: 'The old map is wrong', createdAt: new Date().toISOString() });

  const db = app.db.sql;
  const [npc] =
    await db`insert into npcs (player_id, name, job_title) values (${alice.playerId}, 'Ada', 'Librarian') returning id`;
  const [c] =
    await db`insert into conversations (player_id, title) values (${alice.playerId}, 'The map question') returning id`;
  await db`insert into conversation_participants values (${c!.id}, ${npc!.id}, 0)`;
  const turn = async (role: string, parts: unknown[]) =>
    (
      await db`insert into messages (conversation_id, role, npc_id, npc_name, parts, text, provider, model)
        values (${c!.id}, ${role}, ${role === 'npc' ? npc!.id : null}, ${role === 'npc' ? 'Ada' : null}, ${db.json(parts as never)}, '',
          ${role === 'npc' ? 'fake' : null}, ${role === 'npc' ? 'fake-model' : null}) returning id`
    )[0]!.id as string;
  await turn('player', [
    {
      type: 'text',
      text: `Is ${post.uri} right, @bob.test? <img src=x onerror="window.pwned=1"><script>window.pwned=2</script>`,
    },
  ]);
  const secret = await turn('npc', [
    { type: 'tool', id: 'a', name: 'search', input: { q: 'maps' }, state: 'done', output: 'x' },
    { type: 'tool', id: 'b', name: 'fetch', input: {}, state: 'failed', error: 'timeout' },
    { type: 'text', text: 'It is wrong; the vault code is 9911.' },
  ]);
  const hidden = await turn('player', [{ type: 'text', text: 'Private aside' }]);
  const at = 'It is wrong; the vault code is '.length;
  const res = await app.api(`/api/conversations/${c!.id}/publication`, {
    method: 'PUT',
    cookie: alice.cookie,
    body: {
      title: 'The map question',
      // The second step's real name is published by choice (a tool not of this server's own goes out as "tool").
      choices: {
        [secret]: { redactions: [{ start: at, end: at + 4 }], stepNames: [null, 'fetch'] },
        [hidden]: { withheld: true },
      },
    },
  });
  expect(res.status).toBe(200);
  const { uri } = (await res.json()) as { uri: string };
  const rkey = uri.split('/').pop()!;
  // The post changes after it was discussed.
  await bobAgent.com.atproto.repo.putRecord({
    repo: bob.did,
    collection: 'app.bsky.feed.post',
    rkey: post.uri.split('/').pop()!,
    record: {
      $type: 'app.bsky.feed.post',
      text: 'The old map is right after all',
      createdAt: new Date().toISOString(),
    },
  });

  const url = `${app.url}/profile/alice.test/thread/${rkey}`;
  const html = await (await fetch(url)).text();
  expect(html).toContain('<meta property="og:title" content="The map question">');
  expect(html).toContain('twitter:card');

  const { page } = reader;
  await page.goto(url);
  const turns = page.locator('ol.thread > li');
  await expect.poll(() => turns.count()).toBe(3);
  expect(await turns.nth(0).locator('.speaker').textContent()).toBe('@alice.test');
  expect(await turns.nth(0).textContent()).toContain('About @bob.test');
  expect(await turns.nth(0).locator('.ref').textContent()).toContain('(changed since)');
  expect(await turns.nth(1).locator('.model').textContent()).toBe('fake/fake-model');
  expect(await turns.nth(1).textContent()).toContain('the vault code is ████████.');
  expect(await turns.nth(1).textContent()).not.toContain('9911');
  expect(await turns.nth(1).locator('.steps li.failed').textContent()).toContain('fetch');
  expect(await turns.nth(2).textContent()).toContain('A turn happened here and was not published.');
  expect(await page.locator('ol.thread img, ol.thread script').count()).toBe(0);
  // Markup is published text: shown literally, not dropped.
  expect(await turns.nth(0).textContent()).toContain('<script>window.pwned=2</script>');
  expect(await page.evaluate('window.pwned')).toBeUndefined();

  await page.goto(`${app.url}/threads`);
  await page.getByRole('link', { name: 'The map question' }).waitFor();
  await page.getByRole('link', { name: '@alice.test' }).first().click();
  await page.getByRole('heading', { name: 'Conversations published by alice.test' }).waitFor();
  await page.getByRole('link', { name: 'The map question' }).click();
  await turns.first().waitFor();
}, 90_000);

it('a title with replacement patterns stays text in the page, and an image in published text is never fetched', async () => {
  const alice = await local.signInAs('alice.test');
  const { app } = local;
  let pixelRequests = 0;
  const pixel = http.createServer((_req, res) => {
    pixelRequests++;
    res.end();
  });
  await new Promise<void>((r) => pixel.listen(0, '127.0.0.1', () => r()));
  const image = `http://127.0.0.1:${(pixel.address() as AddressInfo).port}/pixel.png`;
  try {
    const { conversationId } = await insertConversation(app.db.sql, alice.playerId, {
      turns: [
        {
          role: 'player',
          parts: [{ type: 'text', text: `Look: ![a tracking pixel](${image}) and tell me.` }],
        },
        { role: 'npc', parts: [{ type: 'text', text: 'A pixel.' }] },
      ],
    });
    const title = "Costs $' and $& and $` here";
    const res = await app.api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      cookie: alice.cookie,
      body: { title },
    });
    expect(res.status).toBe(200);
    const rkey = ((await res.json()) as { uri: string }).uri.split('/').pop()!;
    const url = `${app.url}/profile/alice.test/thread/${rkey}`;
    const html = await (await fetch(url, { headers: { accept: 'text/html' } })).text();
    expect(html.match(/<title>/g)).toHaveLength(1);
    expect(html).toContain(`<title>Costs $&#39; and $&amp; and $\` here · AgentsVille</title>`);
    expect(html).toContain(`<meta property="og:title" content="Costs $&#39; and $&amp; and $\` here">`);

    await reader.page.goto(url);
    const link = reader.page.locator('ol.thread a.image-link');
    await link.waitFor();
    expect(await link.getAttribute('href')).toBe(image);
    expect(await reader.page.locator('ol.thread img').count()).toBe(0);
    expect(pixelRequests).toBe(0);
  } finally {
    await new Promise<void>((r) => pixel.close(() => r()));
  }
}, 60_000);
