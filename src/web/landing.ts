import { parseCookie } from 'cookie';
import { type Request, type Response, Router } from 'express';
import { findSession, SESSION_COOKIE } from '../auth/index.ts';
import type { Sql } from '../db/index.ts';

export interface DemoAccountInfo {
  handle: string;
  password: string;
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * The server-rendered front door: sign in with a handle (demo accounts offered in offline mode), or see who
 * you are signed in as. Plain HTML with a few lines of script; the Player's web app takes over `/` later.
 */
export function landingRoutes(deps: {
  sql: Sql;
  demoAccounts: () => DemoAccountInfo[];
  baseUrl: () => string;
}): Router {
  const router = Router();
  router.get('/', async (req: Request, res: Response) => {
    // The local OAuth client returns to 127.0.0.1: a session cookie set there is not sent to "localhost".
    if (req.hostname === 'localhost' && deps.baseUrl().startsWith('http://127.0.0.1')) {
      res.redirect(302, `${deps.baseUrl()}${req.originalUrl}`);
      return;
    }
    const token = parseCookie(req.headers.cookie ?? '')[SESSION_COOKIE];
    const player = token ? await findSession(deps.sql, token) : undefined;
    res.type('html').send(player ? signedIn(player.handle ?? player.did) : signIn(deps.demoAccounts()));
  });
  return router;
}

const page = (body: string) => `<!doctype html><html lang="en"><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>AgentsVille</title>
<style>body{font:16px/1.5 system-ui,sans-serif;color:#1d1d1f;background:#fafaf7;margin:0}
main{max-width:30rem;margin:4rem auto;padding:0 1rem}h1{font-size:1.6rem}
input,button{font:inherit;padding:.5rem .75rem;border-radius:.5rem;border:1px solid #888}
button{background:#1d4ed8;color:#fff;border-color:#1d4ed8;cursor:pointer}
[role=alert]{color:#b00020}code{background:#eee;padding:0 .25rem;border-radius:.25rem}</style>
<main>${body}</main></html>`;

function signIn(demo: DemoAccountInfo[]): string {
  const demoList = demo.length
    ? `<section aria-labelledby="demo"><h2 id="demo">Demo accounts (offline mode)</h2><ul>${demo
        .map(
          (a) =>
            `<li><button type="button" data-handle="${escapeHtml(a.handle)}">Sign in as ${escapeHtml(a.handle)}</button> password <code>${escapeHtml(a.password)}</code></li>`,
        )
        .join('')}</ul></section>`
    : '';
  return page(`<h1>AgentsVille</h1><p>Sign in with your Bluesky (ATProto) account.</p>
<form id="signin"><label for="identifier">Handle</label><br>
<input id="identifier" name="identifier" autocomplete="username" placeholder="alice.bsky.social" required>
<button type="submit">Sign in</button><p id="error" role="alert"></p></form>${demoList}
<script type="module">
const error = document.getElementById('error');
async function signIn(identifier) {
  error.textContent = '';
  const res = await fetch('/api/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ identifier }) });
  const body = await res.json().catch(() => ({}));
  if (res.ok) location.assign(body.url); else error.textContent = body.error?.message ?? 'Sign-in failed.';
}
document.getElementById('signin').addEventListener('submit', (e) => { e.preventDefault(); signIn(e.target.identifier.value); });
for (const b of document.querySelectorAll('[data-handle]')) b.addEventListener('click', () => signIn(b.dataset.handle));
</script>`);
}

function signedIn(name: string): string {
  return page(`<h1>AgentsVille</h1><p id="who">Signed in as <strong>@${escapeHtml(name)}</strong>.</p>
<button id="logout" type="button">Sign out</button>
<script type="module">
document.getElementById('logout').addEventListener('click', async () => {
  await fetch('/api/auth/logout', { method: 'POST' }); location.assign('/');
});
</script>`);
}
