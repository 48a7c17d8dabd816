import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../src/log/index.ts';
import { SecretBox } from '../../src/village/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { askNpc } from '../support/askNpc.ts';
import { openai, openaiStream, startWireFake, type WireFake } from '../support/wireFakes.ts';

// The real server, the real @ai-sdk/openai, and a fake OpenAI endpoint: OPENAI_BASE_URL is set, OPENAI_API_KEY
// is not, so the only key the openai Provider can have is one an admin adds in the app.
const SECRETS_KEY = randomBytes(32);
const ADMIN = 'did:plc:keyadmin';
const KEY = `sk-test-${randomBytes(12).toString('hex')}4f2a`;
let fake: WireFake;
let app: TestApp;
const logged: string[] = [];
beforeAll(async () => {
  fake = await startWireFake();
  app = await startTestApp(
    {},
    { ADMIN_DIDS: ADMIN, OPENAI_BASE_URL: `${fake.origin}/v1`, SECRETS_KEY: SECRETS_KEY.toString('hex') },
    // Everything the server logs, at every level, as written: the key must not be in any of it.
    {
      logger: createLogger({
        level: 'trace',
        destination: { write: (line: string) => void logged.push(line) },
      }),
    },
  );
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

const reply = (text: string) => () =>
  openaiStream(
    openai.created('gpt-5-mini'),
    openai.message(0, 'msg_1', [text]),
    openai.completed('gpt-5-mini', { input_tokens: 5, output_tokens: 2 }),
  );
type View = { canStore: boolean; keys: { provider: string; source: string | null; ending: string | null }[] };
const openaiRow = (v: View) => v.keys.find((k) => k.provider === 'openai');

it('an admin adds an OpenAI key in the app: stored encrypted, never shown again, used at the next turn', async () => {
  const admin = await app.signIn(ADMIN);
  const player = await app.signIn();
  // Only an admin sees or changes keys.
  expect((await app.api('/api/village/keys', { cookie: player.cookie })).status).toBe(403);
  const put = (cookie: string, apiKey: string) =>
    app.api('/api/village/keys/openai', { method: 'PUT', cookie, body: { apiKey } });
  expect((await put(player.cookie, KEY)).status).toBe(403);

  // Before: no key, so no openai Provider.
  const before = (await (await app.api('/api/village/keys', { cookie: admin.cookie })).json()) as View;
  expect(before.canStore).toBe(true);
  expect(openaiRow(before)).toMatchObject({ source: null, ending: null });
  const npcBefore = await app.api('/api/npcs', {
    cookie: player.cookie,
    body: { name: 'Tide', provider: 'openai' },
  });
  expect(npcBefore.status).toBe(400);

  // A key with a line break pasted in the middle is refused, and the answer does not repeat it.
  const bad = await put(admin.cookie, 'sk-abc def-123456');
  expect(bad.status).toBe(400);
  expect(await bad.text()).not.toContain('sk-abc');

  // Pasted with a trailing newline (as copies come): stored; the answer says where from and its last four only.
  const saved = await put(admin.cookie, `${KEY}\n`);
  expect(saved.status).toBe(200);
  const raw = await saved.text();
  expect(raw).not.toContain(KEY.slice(0, -4));
  expect(openaiRow(JSON.parse(raw) as View)).toMatchObject({ source: 'app', ending: '4f2a' });

  // At rest: ciphertext only, which opens with this instance's key under its Provider's name and nothing else.
  const [row] = await app.db
    .sql`select iv, ciphertext, tag, ending from provider_keys where provider_id = 'openai'`;
  const sealed = { iv: row!.iv as Buffer, ciphertext: row!.ciphertext as Buffer, tag: row!.tag as Buffer };
  expect(sealed.ciphertext.includes(Buffer.from(KEY))).toBe(false);
  expect(sealed.ciphertext.includes(Buffer.from(KEY.slice(8, 20)))).toBe(false);
  expect(new SecretBox(SECRETS_KEY).open('openai', sealed)).toBe(KEY);
  expect(new SecretBox(randomBytes(32)).open('openai', sealed)).toBeUndefined();
  expect(new SecretBox(SECRETS_KEY).open('anthropic', sealed)).toBeUndefined();

  // The Village lists the Provider, and a turn goes out with the key, no restart.
  const village = (await (await app.api('/api/village', { cookie: player.cookie })).json()) as {
    providers: { id: string }[];
  };
  expect(village.providers.map((p) => p.id)).toContain('openai');
  fake.enqueue(reply('Six.'));
  const first = await askNpc(app, player.cookie, { provider: 'openai', model: 'gpt-5-mini' }, fake);
  expect(first.reply.text).toBe('Six.');
  expect(fake.requests.at(-1)!.headers.authorization).toBe(`Bearer ${KEY}`);

  // Replaced: the next turn uses the new key.
  const next = `sk-next-${randomBytes(8).toString('hex')}`;
  expect((await put(admin.cookie, next)).status).toBe(200);
  fake.enqueue(reply('Seven.'));
  await askNpc(app, player.cookie, { provider: 'openai', model: 'gpt-5-mini' }, fake);
  expect(fake.requests.at(-1)!.headers.authorization).toBe(`Bearer ${next}`);

  // Removed: the Provider is gone again, and its NPCs' turns are refused in words.
  const removed = await app.api('/api/village/keys/openai', { method: 'DELETE', cookie: admin.cookie });
  expect(openaiRow((await removed.json()) as View)).toMatchObject({ source: null, ending: null });
  const npcs = (await (await app.api('/api/npcs', { cookie: player.cookie })).json()) as {
    npcs: { id: string }[];
  };
  const conv = await app.api('/api/conversations', {
    cookie: player.cookie,
    body: { npcIds: [npcs.npcs[0]!.id] },
  });
  const { conversation } = (await conv.json()) as { conversation: { id: string } };
  const refused = await app.api(`/api/conversations/${conversation.id}/messages`, {
    cookie: player.cookie,
    body: { text: 'Hello?' },
  });
  expect(refused.status).toBe(400);
  expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('PROVIDER_NOT_CONFIGURED');

  // Never logged.
  expect(logged.join('\n')).not.toContain(KEY);
  expect(logged.join('\n')).not.toContain(next);
});

it('an unknown Provider is a 404 in words', async () => {
  const admin = await app.signIn(ADMIN);
  const res = await app.api('/api/village/keys/mistral', {
    method: 'PUT',
    cookie: admin.cookie,
    body: { apiKey: KEY },
  });
  expect(res.status).toBe(404);
});
