import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import express, { type Request, type Response, Router } from 'express';
import { escapeHtml, respond } from '../http/index.ts';
import { SignInOptions } from '../wire/index.ts';

export const CLIENT_DIR = path.resolve(import.meta.dirname, '../../dist/client');

export interface DemoAccountInfo {
  handle: string;
  password: string;
}

export interface WebDeps {
  demoAccounts: () => DemoAccountInfo[];
  network: 'local' | 'public';
  /** The URL browsers reach the server at (known once it listens). */
  baseUrl: () => string;
  clientDir?: string;
  /** Title and description of a published thread, for link previews (null when there is none). */
  threadMeta?: (actor: string, rkey: string) => Promise<ThreadMeta | null>;
}

export interface ThreadMeta {
  title: string;
  description: string;
  url: string;
  /** The page's one address (by DID), its record's at:// URI, and its author's Atom feed. */
  canonical: string;
  atUri: string;
  feed: string;
}

/** OpenGraph and Twitter card tags, so a shared thread link previews with its title and first words. */
function withMeta(html: string, meta: ThreadMeta): string {
  const tags = [
    `<title>${escapeHtml(meta.title)} · AgentsVille</title>`,
    `<meta property="og:type" content="article">`,
    `<meta property="og:title" content="${escapeHtml(meta.title)}">`,
    `<meta property="og:description" content="${escapeHtml(meta.description)}">`,
    `<meta property="og:url" content="${escapeHtml(meta.url)}">`,
    `<meta property="og:site_name" content="AgentsVille">`,
    `<meta name="twitter:card" content="summary">`,
    `<meta name="twitter:title" content="${escapeHtml(meta.title)}">`,
    `<meta name="twitter:description" content="${escapeHtml(meta.description)}">`,
    `<meta name="description" content="${escapeHtml(meta.description)}">`,
    `<link rel="canonical" href="${escapeHtml(meta.canonical)}">`,
    `<link rel="alternate" href="${escapeHtml(meta.atUri)}">`,
    `<link rel="alternate" type="application/atom+xml" title="The author's conversations" href="${escapeHtml(meta.feed)}">`,
  ].join('\n    ');
  // A function, not a replacement string: `$'` or `$&` in a title must stay text, not splice the document.
  return html.replace(/<title>[^<]*<\/title>/, () => tags);
}

/**
 * Serves the Player's web app (built by Vite into dist/client) and what its sign-in page needs to know.
 * Every other GET that is not an API or OAuth route gets index.html, so deep links work.
 */
export function webRoutes(deps: WebDeps): Router {
  const dir = deps.clientDir ?? CLIENT_DIR;
  const router = Router();

  router.get('/api/auth/options', (_req, res) => {
    respond(res, SignInOptions, { network: deps.network, demoAccounts: deps.demoAccounts() });
  });

  // The local OAuth client returns to 127.0.0.1: a session cookie set there is not sent to "localhost".
  router.use((req, res, next) => {
    if (
      req.method === 'GET' &&
      req.hostname === 'localhost' &&
      deps.baseUrl().startsWith('http://127.0.0.1')
    ) {
      res.redirect(302, `${deps.baseUrl()}${req.originalUrl}`);
      return;
    }
    next();
  });

  router.use(express.static(dir, { index: false, maxAge: '1h' }));
  router.get('/profile/:actor/thread/:rkey', async (req, res, next) => {
    const index = path.join(dir, 'index.html');
    const meta = deps.threadMeta
      ? await deps.threadMeta(req.params.actor, req.params.rkey).catch(() => null)
      : null;
    if (!meta || !existsSync(index)) return next();
    res
      .set('Cache-Control', 'no-cache')
      .type('html')
      .send(withMeta(await readFile(index, 'utf8'), meta));
  });
  // Any page a browser navigates to is the app (a handle such as alice.test has a dot, so the path's shape
  // cannot tell); a missing asset fetched by a script asks for something other than HTML and gets a 404.
  // The root is always the app, whatever the client accepts (`curl http://127.0.0.1:3000/` shows it too).
  // Feeds and the sitemap are documents of their own, whatever a browser's Accept says.
  router.get(
    /^\/(?!api\/|oauth\/|xrpc\/|feeds\/|healthz$|sitemap\.xml$)(?!.*\.atom$).*/,
    (req: Request, res: Response, next) => {
      if (req.path !== '/' && !(req.get('accept') ?? '').includes('text/html')) return next();
      const index = path.join(dir, 'index.html');
      if (!existsSync(index)) {
        res
          .status(503)
          .type('text')
          .send('The web app is not built yet: run `npm run build` (npm start does it).');
        return;
      }
      // Relative to `root`: sendFile refuses a dot-folder anywhere in an absolute path (a clone under ~/.local).
      res.set('Cache-Control', 'no-cache').sendFile('index.html', { root: dir });
    },
  );
  return router;
}
