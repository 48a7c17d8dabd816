import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { openSignedIn } from '../support/webapp.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
}, 60_000);
afterAll(() => app?.close());

const raw = (path: string, init: RequestInit = {}) => fetch(`${app.running.listenUrl}${path}`, init);

describe('what every answer tells the browser', () => {
  it('a strict Content-Security-Policy, no sniffing, no framing, a short Referer — on pages and on the API', async () => {
    for (const path of ['/', '/api/me', '/xrpc/click.aligned.chat.listSessions', '/healthz']) {
      const res = await raw(path, { headers: { accept: 'text/html' } });
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).toContain("img-src 'self' data:");
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('referrer-policy'), path).toBe('strict-origin-when-cross-origin');
    }
  });

  it('the root is the app for any client (curl asks for */*); a missing asset a script fetches is a 404', async () => {
    const root = await raw('/');
    expect(root.status).toBe(200);
    expect(root.headers.get('content-type')).toContain('text/html');
    expect(await root.text()).toContain('<div id="root">');
    expect((await raw('/assets/missing.js')).status).toBe(404);
  });

  it('the built app runs under that policy without a single violation', async () => {
    const browser = await openSignedIn(app);
    try {
      const violations: string[] = [];
      browser.page.on('console', (m) => {
        if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
      });
      await browser.page.addInitScript(
        "document.addEventListener('securitypolicyviolation', (e) => console.error('Content Security Policy: ' + e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sample + ' ' + e.sourceFile))",
      );
      for (const path of ['/', '/npcs', '/tools', '/village', '/usage', '/threads']) {
        await browser.page.goto(`${app.url}${path}`);
        await browser.page.locator('main, .reader').first().waitFor();
      }
      expect(violations).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});

describe('the app for every page a browser opens', () => {
  it('serves the app for a path with a dot (a handle), and a 404 for a missing asset', async () => {
    const page = await raw('/c/some.thing', { headers: { accept: 'text/html,*/*' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="root">');
    // An author's page is rendered on the server (#30): one this server cannot find is a readable 404 page.
    const author = await raw('/profile/nobody.test', { headers: { accept: 'text/html,*/*' } });
    expect(author.status).toBe(404);
    expect(author.headers.get('content-type')).toContain('text/html');
    expect(await author.text()).toContain('<div id="root">');
    const asset = await raw('/assets/missing.js', { headers: { accept: '*/*' } });
    expect(asset.status).toBe(404);
  });
});

describe('XRPC answers in the spec’s shape', () => {
  it('a missing parameter and a garbage cursor are 400 {error, message}', async () => {
    const noUri = await raw('/xrpc/click.aligned.chat.getThread');
    expect(noUri.status).toBe(400);
    expect(await noUri.json()).toMatchObject({ error: 'InvalidRequest', message: expect.any(String) });
    for (const cursor of ['garbage', Buffer.from('x|y').toString('base64url'), '%%%']) {
      const res = await raw(`/xrpc/click.aligned.chat.listSessions?cursor=${cursor}`);
      expect(res.status, cursor).toBe(400);
      expect(await res.json()).toMatchObject({ error: 'InvalidRequest' });
    }
  });
});

describe('changes need JSON or the app’s own header', () => {
  it('a bodiless cross-site POST (logout) or DELETE is refused and changes nothing', async () => {
    const { cookie } = await app.signIn();
    const { conversationId } = await (async () => {
      const npc = (await (await app.api('/api/npcs', { cookie, body: { name: 'Ada' } })).json()) as {
        npc: { id: string };
      };
      const c = (await (
        await app.api('/api/conversations', { cookie, body: { npcIds: [npc.npc.id] } })
      ).json()) as { conversation: { id: string } };
      return { conversationId: c.conversation.id };
    })();
    const logout = await raw('/api/auth/logout', { method: 'POST', headers: { cookie } });
    expect(logout.status).toBe(400);
    const form = await raw(`/api/conversations/${conversationId}`, {
      method: 'DELETE',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=b',
    });
    expect(form.status).toBe(400);
    expect((await app.api('/api/me', { cookie })).status).toBe(200);
    expect((await app.api(`/api/conversations/${conversationId}`, { cookie })).status).toBe(200);
    // The control: the app's own header is enough.
    expect(
      (
        await raw(`/api/conversations/${conversationId}`, {
          method: 'DELETE',
          headers: { cookie, 'x-agentsville': '1' },
        })
      ).status,
    ).toBe(204);
  });
});

describe('the public routes are rationed per address', () => {
  it('past the limit: 429 with Retry-After, in each route’s own error shape', async () => {
    const strict = await startTestApp({ publicRequestsPerMinute: 5 });
    try {
      const hit = (path: string) =>
        fetch(`${strict.running.listenUrl}${path}`, { headers: { accept: 'text/html' } });
      const answers = [];
      for (let i = 0; i < 7; i++) answers.push(await hit('/xrpc/click.aligned.chat.listSessions'));
      expect(answers.slice(0, 5).map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      const over = answers[5]!;
      expect(over.status).toBe(429);
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await over.json()).toMatchObject({ error: 'RateLimitExceeded' });
      const reader = await hit('/api/reader/threads/alice.test/3kaaaaaaaaaa2');
      expect(reader.status).toBe(429);
      expect(await reader.json()).toMatchObject({ error: { code: 'RATE_LIMITED' } });
      // A signed-in Player's own API is not rationed this way.
      const { cookie } = await strict.signIn();
      expect((await strict.api('/api/conversations', { cookie })).status).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it('a Player’s limits hold across server instances: two instances on one database allow them once, not twice', async () => {
    const a = await startTestApp();
    const b = await startTestApp({}, {}, { db: a.db, fake: a.fake });
    try {
      const { cookie } = await a.signIn();
      // Searches: 120 a minute per Player, asked of the two instances in turn.
      const statuses: number[] = [];
      for (let i = 0; i < 122; i++) {
        const on = i % 2 === 0 ? a : b;
        const res = await on.api('/api/search?q=anything', { cookie });
        await res.body?.cancel();
        statuses.push(res.status);
      }
      expect(statuses.slice(0, 120).every((s) => s === 200)).toBe(true);
      expect(statuses.slice(120)).toEqual([429, 429]);
    } finally {
      await b.close();
      await a.close();
    }
  });
});
