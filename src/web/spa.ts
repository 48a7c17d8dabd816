import { existsSync } from 'node:fs';
import path from 'node:path';
import express, { type Request, type Response, Router } from 'express';
import { respond } from '../http/index.ts';
import { SignInOptions } from '../wire/index.ts';
import { type ReaderSource, readerPages } from './readerPages.ts';

export const CLIENT_DIR = path.resolve(import.meta.dirname, '../../dist/client');

export interface DemoAccountInfo {
  handle: string;
  password: string;
}

export interface WebDeps {
  demoAccounts: DemoAccountInfo[];
  network: 'local' | 'public';
  /** The URL browsers reach the server at (known once it listens). */
  baseUrl: string;
  clientDir?: string;
  /** The reading pages' data (thread, author, everyone's list), rendered here on the server. */
  reader?: ReaderSource;
}

/**
 * Serves the Player's web app (built by Vite into dist/client) and what its sign-in page needs to know.
 * Every other GET that is not an API or OAuth route gets index.html, so deep links work.
 */
export function webRoutes(deps: WebDeps): Router {
  const dir = deps.clientDir ?? CLIENT_DIR;
  const router = Router();

  router.get('/api/auth/options', (_req, res) => {
    respond(res, SignInOptions, { network: deps.network, demoAccounts: deps.demoAccounts });
  });

  // The local OAuth client returns to 127.0.0.1: a session cookie set there is not sent to "localhost".
  router.use((req, res, next) => {
    if (req.method === 'GET' && req.hostname === 'localhost' && deps.baseUrl.startsWith('http://127.0.0.1')) {
      res.redirect(302, `${deps.baseUrl}${req.originalUrl}`);
      return;
    }
    next();
  });

  // Reading pages are rendered here (readable with no script, then hydrated by the reader bundle). Before the
  // static files: none is at their paths, and looking for one on every page read costs a disk lookup that fails.
  if (deps.reader) router.use(readerPages({ source: deps.reader, baseUrl: deps.baseUrl, dir }));
  router.use(express.static(dir, { index: false, maxAge: '1h' }));
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
