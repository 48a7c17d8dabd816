import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Agent } from '@atproto/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOAuthClient } from '../../src/auth/index.ts';
import { connect } from '../../src/db/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type Browser, OUTPUT_DIR, openBrowser, signInThroughPds } from '../support/browser.ts';
import { freePort } from '../support/ports.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

let app: TestApp;
let browser: Browser;
let dataDir: string;
let env: Record<string, string>;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'av-auth-'));
  env = {
    ATPROTO_NETWORK: 'local',
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    LOCALNET_PDS_PORT: String(await freePort()),
    LOCALNET_PLC_PORT: String(await freePort()),
  };
  app = await startTestApp({}, env);
  browser = await openBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await rm(dataDir, { recursive: true, force: true });
});

const account = (handle: string) => app.running.localnet!.accounts.find((a) => a.handle === handle)!;
const me = (cookie: string) => app.api('/api/me', { cookie });
const count = async (table: 'sessions' | 'players' | 'oauth_sessions') =>
  Number((await app.db.sql`select count(*)::int as n from ${app.db.sql(table)}`)[0]!.n);

describe('signing in with a demo account through the local PDS', () => {
  it('lands signed in, holds a session across a restart, and logout revokes it', async () => {
    const alice = account('alice.test');
    const { page, context } = browser;
    let callbackUrl = '';
    page.on('request', (r) => {
      if (r.url().includes('/oauth/callback')) callbackUrl = r.url();
    });
    await signInThroughPds(page, app.url, alice.handle, alice.password);
    await page.waitForURL(`${app.url}/`);
    await expect.poll(() => page.locator('.who').textContent()).toContain('@alice.test');
    await page.screenshot({ path: path.join(OUTPUT_DIR, 'signed-in.png') });

    const cookies = await context.cookies(app.url);
    const session = cookies.find((c) => c.name === 'av_session')!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    const cookie = `av_session=${session.value}`;
    const who = await me(cookie);
    expect(who.status).toBe(200);
    expect(await who.json()).toEqual({ did: alice.did, handle: 'alice.test' });
    // Only the hash of the cookie is stored.
    const stored = await app.db.sql`select token_hash from sessions`;
    expect(stored.some((r) => Buffer.from(r.token_hash).toString('utf8').includes(session.value))).toBe(
      false,
    );

    // A turn works under that session.
    const { conversationId } = await setupConversation(app, cookie);
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: 'Hello from Alice' },
      }),
    );
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });

    // A replayed callback (the same code and state) is refused, and stores nothing.
    const sessionsBefore = await count('sessions');
    const replay = await fetch(callbackUrl, { redirect: 'manual' });
    expect(replay.status).toBe(400);
    expect(await replay.text()).toMatch(/not valid or was already used|did not complete/);
    expect(await count('sessions')).toBe(sessionsBefore);

    // The OAuth session can write our collections and nothing else.
    const oauthSession = await app.running.oauth.restore(alice.did);
    const agent = new Agent(oauthSession);
    const ok = await agent.com.atproto.repo.createRecord({
      repo: alice.did,
      collection: 'click.aligned.chat.session',
      record: {
        $type: 'click.aligned.chat.session',
        title: 'scope check',
        createdAt: new Date().toISOString(),
      },
    });
    expect(ok.success).toBe(true);
    await expect(
      agent.com.atproto.repo.createRecord({
        repo: alice.did,
        collection: 'app.bsky.feed.post',
        record: {
          $type: 'app.bsky.feed.post',
          text: 'should be refused',
          createdAt: new Date().toISOString(),
        },
      }),
    ).rejects.toMatchObject({ status: 403 });

    // Restart the server: the session is restored from PostgreSQL.
    await app.running.close();
    app = await startTestApp({}, env, { db: app.db, fake: app.fake });
    expect((await me(cookie)).status).toBe(200);

    // Logout revokes the OAuth session; the old cookie is then refused.
    const out = await app.api('/api/auth/logout', { method: 'POST', cookie });
    expect(out.status).toBe(204);
    expect((await me(cookie)).status).toBe(401);
    expect(await count('oauth_sessions')).toBe(0);
    await expect(app.running.oauth.restore(alice.did)).rejects.toThrow();
  }, 120_000);

  it('login CSRF: a victim who opens an attacker’s unfinished callback URL gets no session', async () => {
    const bob = account('bob.test');
    const attacker = await openBrowser();
    const victim = await openBrowser();
    try {
      // The attacker signs in as far as the PDS's redirect back, and keeps the callback URL instead.
      let callbackUrl = '';
      // The PDS redirects to the callback; Playwright does not route redirects, so Chromium's own Fetch
      // interception holds the request back.
      const cdp = await attacker.context.newCDPSession(attacker.page);
      cdp.on('Fetch.requestPaused', (e: { requestId: string; request: { url: string } }) => {
        callbackUrl = e.request.url;
        void cdp.send('Fetch.failRequest', { requestId: e.requestId, errorReason: 'Aborted' });
      });
      await cdp.send('Fetch.enable', {
        patterns: [{ urlPattern: '*/oauth/callback*', requestStage: 'Request' }],
      });
      await signInThroughPds(attacker.page, app.url, bob.handle, bob.password).catch(() => {});
      await expect.poll(() => callbackUrl, { timeout: 15_000 }).toContain('/oauth/callback?');
      const sessions = await count('sessions');

      const res = await victim.page.goto(callbackUrl);
      expect(res?.status()).toBe(400);
      expect(await victim.page.getByRole('alert').textContent()).toContain('not started in this browser');
      expect((await victim.context.cookies(app.url)).find((c) => c.name === 'av_session')).toBeUndefined();
      expect(await count('sessions')).toBe(sessions);
    } finally {
      await attacker.close();
      await victim.close();
    }
  }, 90_000);

  it('denying consent signs nobody in and says so', async () => {
    const bob = account('bob.test');
    const players = await count('players');
    await signInThroughPds(browser.page, app.url, bob.handle, bob.password, 'Deny access');
    await browser.page.waitForURL(/\/oauth\/callback/);
    await expect.poll(() => browser.page.getByRole('alert').textContent()).toContain('declined');
    expect(await count('players')).toBe(players);
  }, 60_000);
});

describe('two server instances on one database', () => {
  it('refresh the same OAuth session at once: one refresh reaches the PDS, both keep working', async () => {
    const bob = account('bob.test');
    await signInThroughPds(browser.page, app.url, bob.handle, bob.password);
    await browser.page.waitForURL(`${app.url}/`);
    // Make the stored access token due for a refresh.
    await app.db
      .sql`update oauth_sessions set value = jsonb_set(value, '{tokenSet,expires_at}', '"2000-01-01T00:00:00.000Z"')
      where did = ${bob.did}`;
    let refreshes = 0;
    // A refresh is a token request the PDS grants (a first try refused for a DPoP nonce is not one).
    const counting: typeof fetch = async (input, init) => {
      const req = new Request(input, init);
      const res = await fetch(req);
      if (req.method === 'POST' && new URL(req.url).pathname === '/oauth/token' && res.ok) refreshes++;
      return res;
    };
    const instances = [connect(app.db.url), connect(app.db.url)];
    try {
      const clients = await Promise.all(
        instances.map((sql) =>
          createOAuthClient(sql, {
            baseUrl: app.url,
            privateKeys: [],
            handleResolver: app.running.localnet!.pdsUrl,
            plcUrl: app.running.localnet!.plcUrl,
            allowHttp: true,
            fetch: counting,
          }),
        ),
      );
      const sessions = await Promise.all(clients.map((c) => c.restore(bob.did, 'auto')));
      expect(refreshes).toBe(1);
      const tokens = await Promise.all(sessions.map((s) => s.getTokenInfo(false)));
      expect(tokens[0]!.expiresAt?.getTime()).toBe(tokens[1]!.expiresAt?.getTime());
      expect(tokens[0]!.expiresAt!.getTime()).toBeGreaterThan(Date.now());
      for (const session of sessions) {
        const agent = new Agent(session);
        const res = await agent.com.atproto.repo.describeRepo({ repo: bob.did });
        expect(res.data.handle).toBe('bob.test');
      }
    } finally {
      await Promise.all(instances.map((sql) => sql.end()));
    }
  }, 60_000);
});

describe('an OAuth session revoked elsewhere', () => {
  it('signs the Player out with a reason', async () => {
    const alice = account('alice.test');
    await signInThroughPds(browser.page, app.url, alice.handle, alice.password);
    await browser.page.waitForURL(`${app.url}/`);
    const token = (await browser.context.cookies(app.url)).find((c) => c.name === 'av_session')!.value;
    const cookie = `av_session=${token}`;
    expect((await me(cookie)).status).toBe(200);
    // Another device holding the same grant revokes it at the PDS; our store still has the old tokens.
    const [row] = await app.db.sql`select value from oauth_sessions where did = ${alice.did}`;
    const copy = new Map<string, unknown>([[alice.did, row!.value]]);
    const elsewhere = await createOAuthClient(app.db.sql, {
      baseUrl: app.url,
      privateKeys: [],
      handleResolver: app.running.localnet!.pdsUrl,
      plcUrl: app.running.localnet!.plcUrl,
      allowHttp: true,
      sessionStore: {
        get: async (k) => copy.get(k) as never,
        set: async (k, v) => void copy.set(k, v),
        del: async (k) => void copy.delete(k),
      },
    });
    await elsewhere.revoke(alice.did);
    await app.db
      .sql`update oauth_sessions set value = jsonb_set(value, '{tokenSet,expires_at}', '"2000-01-01T00:00:00.000Z"')
      where did = ${alice.did}`;
    const ended = await me(cookie);
    expect(ended.status).toBe(401);
    const body = (await ended.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('SESSION_ENDED');
    expect(body.error.message).toMatch(/revoked or expired/);
    expect((await me(cookie)).status).toBe(401);
  }, 60_000);
});

describe('bad sign-in input', () => {
  it('refuses a garbage handle, an unknown one, and a forged callback, storing nothing', async () => {
    const garbage = await app.api('/api/auth/login', { body: { identifier: 'not a handle!!' } });
    expect(garbage.status).toBe(400);
    expect(((await garbage.json()) as { error: { code: string } }).error.code).toBe('INVALID_BODY');

    const unknown = await app.api('/api/auth/login', { body: { identifier: 'nobody.test' } });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('ACCOUNT_NOT_FOUND');

    const down = await app.api('/api/auth/login', {
      body: { identifier: `http://127.0.0.1:${await freePort()}` },
    });
    expect(down.status).toBe(502);
    expect(((await down.json()) as { error: { code: string } }).error.code).toBe('PDS_UNREACHABLE');

    const [players, sessions] = [await count('players'), await count('sessions')];
    const forged = await fetch(
      `${app.url}/oauth/callback?state=forged-state&code=forged-code&iss=${encodeURIComponent(app.running.localnet!.pdsUrl)}`,
      {
        redirect: 'manual',
      },
    );
    expect(forged.status).toBe(400);
    expect(forged.headers.get('set-cookie')).toBeNull();
    expect([await count('players'), await count('sessions')]).toEqual([players, sessions]);
  });
});
