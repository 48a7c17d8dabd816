import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Agent } from '@atproto/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOAuthClient } from '../../src/auth/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type Browser, OUTPUT_DIR, openBrowser, shoot, signInThroughPds } from '../support/browser.ts';
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
    // Offline mode says that only local accounts exist, and suggests one, not a Bluesky handle.
    await page.goto(app.url);
    await page.locator('#offline-note', { hasText: 'only its local accounts exist' }).waitFor();
    expect(await page.getByLabel('Your handle').getAttribute('placeholder')).toBe('alice.test');
    await shoot(page, 'signin-offline');
    await signInThroughPds(page, app.url, alice.handle, alice.password);
    await page.waitForURL(`${app.url}/`);
    await expect.poll(() => page.locator('.who').textContent(), { timeout: 15_000 }).toContain('@alice.test');
    await page.screenshot({ path: path.join(OUTPUT_DIR, 'signed-in.png') });

    const cookies = await context.cookies(app.url);
    const session = cookies.find((c) => c.name === 'av_session')!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    const cookie = `av_session=${session.value}`;
    const who = await me(cookie);
    expect(who.status).toBe(200);
    expect(await who.json()).toEqual({ did: alice.did, handle: 'alice.test' });
    // Offline mode: the first demo account is the Village admin (it can add a Provider key in the app); a
    // Player who signs in otherwise is not.
    const village = async (c: string) =>
      ((await (await app.api('/api/village', { cookie: c })).json()) as { isAdmin: boolean }).isAdmin;
    expect(await village(cookie)).toBe(true);
    expect(await village((await app.signIn()).cookie)).toBe(false);
    expect((await app.api('/api/village/keys', { cookie })).status).toBe(200);
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

describe('two devices', () => {
  it('a sign-in on a second browser leaves the first signed in; signing out on one leaves the other', async () => {
    const alice = account('alice.test');
    const second = await openBrowser();
    try {
      const cookieOf = async (b: Browser) =>
        `av_session=${(await b.context.cookies(app.url)).find((c) => c.name === 'av_session')!.value}`;
      await signInThroughPds(browser.page, app.url, alice.handle, alice.password);
      await browser.page.waitForURL(`${app.url}/`);
      const first = await cookieOf(browser);
      const grantBefore = (await app.db.sql`select value from oauth_sessions where did = ${alice.did}`)[0]!
        .value;
      // The second device signs in: the OAuth client revokes the earlier grant and stores a new one.
      await signInThroughPds(second.page, app.url, alice.handle, alice.password);
      await second.page.waitForURL(`${app.url}/`);
      const other = await cookieOf(second);
      const grantAfter = (await app.db.sql`select value from oauth_sessions where did = ${alice.did}`)[0]!
        .value;
      expect(JSON.stringify(grantAfter)).not.toBe(JSON.stringify(grantBefore)); // the revocation on callback ran
      expect((await me(first)).status).toBe(200);
      expect((await me(other)).status).toBe(200);
      // Both work against the PDS with the shared grant: a turn, and the page in the first browser.
      const { conversationId } = await setupConversation(app, first);
      const frames = await collectFrames(
        await app.api(`/api/conversations/${conversationId}/messages`, {
          cookie: first,
          body: { text: 'From A' },
        }),
      );
      expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
      await browser.page.reload();
      await expect.poll(() => browser.page.locator('.who').textContent()).toContain('@alice.test');
      // Signing out on the second device ends only its session; the grant stays for the first.
      expect((await app.api('/api/auth/logout', { method: 'POST', cookie: other })).status).toBe(204);
      expect((await me(other)).status).toBe(401);
      expect((await me(first)).status).toBe(200);
      expect(await count('oauth_sessions')).toBeGreaterThan(0);
      await app.running.oauth.restore(alice.did);
      // The last device to sign out revokes the grant.
      expect((await app.api('/api/auth/logout', { method: 'POST', cookie: first })).status).toBe(204);
      expect((await me(first)).status).toBe(401);
      await expect(app.running.oauth.restore(alice.did)).rejects.toThrow();
    } finally {
      await second.close();
    }
  }, 120_000);
});

describe('two server processes on one database', () => {
  it('refresh the same OAuth session at once: one refresh reaches the PDS, both keep working', async () => {
    const bob = account('bob.test');
    await signInThroughPds(browser.page, app.url, bob.handle, bob.password);
    await browser.page.waitForURL(`${app.url}/`);
    // Nothing else may refresh it meanwhile (the open app asks /api/me, which refreshes when due): the page
    // has finished asking, and the browser holds no session any more.
    await browser.page.waitForLoadState('networkidle');
    await browser.page.goto('about:blank');
    await browser.context.clearCookies();
    // Make the stored access token due for a refresh.
    await app.db
      .sql`update oauth_sessions set value = jsonb_set(value, '{tokenSet,expires_at}', '"2000-01-01T00:00:00.000Z"')
      where did = ${bob.did}`;
    // Each its own OS process: the OAuth library's in-process lock cannot serialise them, only PostgreSQL can.
    const children = [0, 1].map(() =>
      spawn(
        process.execPath,
        ['--import', 'tsx', path.join(import.meta.dirname, '../support/oauthRefresher.ts')],
        {
          env: {
            PATH: process.env.PATH ?? '',
            DATABASE_URL: app.db.url,
            BASE_URL: app.url,
            PDS_URL: app.running.localnet!.pdsUrl,
            PLC_URL: app.running.localnet!.plcUrl,
            DID: bob.did,
          },
          stdio: ['pipe', 'pipe', 'inherit'],
        },
      ),
    );
    const lines = children.map((child) => {
      const read = createInterface({ input: child.stdout! });
      return read[Symbol.asyncIterator]();
    });
    for (const line of lines) expect((await line.next()).value).toBe('ready');
    for (const child of children) child.stdin!.write('go\n');
    const seen = (await Promise.all(
      lines.map(async (l) => JSON.parse((await l.next()).value as string)),
    )) as {
      refreshes: number;
      expiresAt?: string;
      handle?: string;
      error?: string;
    }[];
    expect(seen.map((s) => s.error)).toEqual([undefined, undefined]);
    expect(seen[0]!.refreshes + seen[1]!.refreshes).toBe(1);
    expect(seen[0]!.expiresAt).toBe(seen[1]!.expiresAt);
    expect(new Date(seen[0]!.expiresAt!).getTime()).toBeGreaterThan(Date.now());
    expect(seen.map((s) => s.handle)).toEqual(['bob.test', 'bob.test']);
    // And the session is still there for the web app; the lease the two took turns on is gone.
    expect(await count('oauth_sessions')).toBeGreaterThan(0);
    expect(await app.db.sql`select name from leases where name like 'oauth:%'`).toEqual([]);
    // Two OS processes each start in up to 20-40 s on a loaded machine: the time limit is for hangs only.
  }, 180_000);
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

describe('a PDS that cannot be reached for a moment', () => {
  it('answers 502 PDS_UNREACHABLE and keeps the sign-in; once the PDS answers again, all works', async () => {
    const alice = account('alice.test');
    await signInThroughPds(browser.page, app.url, alice.handle, alice.password);
    await browser.page.waitForURL(`${app.url}/`);
    const token = (await browser.context.cookies(app.url)).find((c) => c.name === 'av_session')!.value;
    const cookie = `av_session=${token}`;
    const { conversationId } = await setupConversation(app, cookie);
    const [row] = await app.db.sql`select value from oauth_sessions where did = ${alice.did}`;
    // Due for a refresh, at an authorization server that does not answer (a closed port).
    const gone = `http://127.0.0.1:${await freePort()}`;
    await app.db.sql`update oauth_sessions set value = jsonb_set(jsonb_set(value,
        '{tokenSet,expires_at}', '"2000-01-01T00:00:00.000Z"'), '{tokenSet,iss}', to_jsonb(${gone}::text))
      where did = ${alice.did}`;
    const [sessions, oauthSessions] = [await count('sessions'), await count('oauth_sessions')];

    const blip = await me(cookie);
    expect(blip.status).toBe(502);
    expect(((await blip.json()) as { error: { code: string } }).error.code).toBe('PDS_UNREACHABLE');
    const publish = await app.api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      cookie,
      body: { choices: {} },
    });
    expect(publish.status).toBe(502);
    expect(((await publish.json()) as { error: { code: string } }).error.code).toBe('PDS_UNREACHABLE');
    expect([await count('sessions'), await count('oauth_sessions')]).toEqual([sessions, oauthSessions]);
    expect(blip.headers.get('set-cookie')).toBeNull();

    // The PDS is back: the same cookie works, no new sign-in.
    await app.db
      .sql`update oauth_sessions set value = ${app.db.sql.json(row!.value)} where did = ${alice.did}`;
    expect((await me(cookie)).status).toBe(200);
  }, 60_000);
});

describe('bad sign-in input', () => {
  it('refuses a garbage handle, an unknown one, and a forged callback, storing nothing', async () => {
    const garbage = await app.api('/api/auth/login', { body: { identifier: 'not a handle!!' } });
    expect(garbage.status).toBe(400);
    expect(((await garbage.json()) as { error: { code: string } }).error.code).toBe('INVALID_BODY');

    // Offline mode: a Bluesky handle is not an account here, and the answer says which ones are.
    const unknown = await app.api('/api/auth/login', { body: { identifier: 'alice.bsky.social' } });
    expect(unknown.status).toBe(400);
    const { error } = (await unknown.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('ACCOUNT_NOT_FOUND');
    expect(error.message).toContain('offline mode, where only its local demo accounts exist (alice.test');
    expect(error.message).toContain('ATPROTO_NETWORK=public');

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
