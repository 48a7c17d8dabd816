import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type Request, type Response, Router } from 'express';
import { AppError, requesterKey } from '../http/index.ts';
import type { ThreadWindow } from '../markdown/index.ts';
import { ThreadPageQuery } from '../wire/index.ts';
import { type CardInput, LinkCards } from './linkCard.ts';
import { type PageMeta, type ReaderAssets, readerPage } from './readerPage.ts';

/** A thread as the reader API answers it (src/appview/thread.ts's ThreadView): passed through as it is. */
export interface ReaderThread {
  meta: PageMeta;
  /** The thread with one page's turns (src/markdown/pages.ts), and which page it is. */
  thread: unknown;
  window: ThreadWindow;
  /** What its link card shows, from the published records. */
  card: CardInput;
}

/** Where the reading pages' data comes from (the AppView, wired in app.ts). */
export interface ReaderSource {
  /**
   * Page `page` (the first unless given) of a published thread, `gone` once deleted, `no-page` past its last
   * page, null when there is none (or it is not served).
   */
  thread(
    actor: string,
    rkey: string,
    page?: number,
    /** Who asked (`requesterKey`): a backfill the read starts is shared fairly between readers. */
    requester?: string,
  ): Promise<ReaderThread | 'gone' | 'no-page' | null>;
  /** Published threads, everyone's (actor null) or one author's; null when the author is unknown. */
  /** `requester`: who asked (`requesterKey`), for the lookups of authors' handles. */
  list(actor: string | null, requester?: string): Promise<{ meta: PageMeta; sessions: unknown[] } | null>;
}

type Render = (data: unknown) => string;
let renderer: Promise<Render> | undefined;
/**
 * The client's own components, rendered here: imported at run time by path, so the server's type check does not
 * take in the client's (DOM) sources — they are checked by client/tsconfig.json. tsx (dev, tests and `npm
 * start`) and Vitest both compile the TSX on import (tsx by the pragma each rendered component carries).
 */
export function loadRenderer(): Promise<Render> {
  const file = path.resolve(import.meta.dirname, '../../client/src/reader/ssr.tsx');
  renderer ??= import(file).then((m: { renderReader: Render }) => m.renderReader);
  return renderer;
}

/** The reader entry's files from Vite's manifest (read once per start: a build replaces the server too). */
function assetsOf(dir: string): ReaderAssets {
  const file = path.join(dir, '.vite', 'manifest.json');
  if (!existsSync(file)) return { styles: [], preload: [] };
  type Chunk = { file: string; css?: string[]; imports?: string[] };
  const manifest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Chunk>;
  const entry = manifest['src/reader.tsx'];
  if (!entry) return { styles: [], preload: [] };
  const imports = (entry.imports ?? []).map((k) => manifest[k]).filter((c): c is Chunk => !!c);
  return {
    script: `/${entry.file}`,
    styles: [entry, ...imports].flatMap((c) => c.css ?? []).map((f) => `/${f}`),
    preload: imports.map((c) => `/${c.file}`),
  };
}

const ACTOR = /^[a-zA-Z0-9._:%~-]{1,300}$/;
const RKEY = /^[a-z2-7]{13}$/;
/** `?page=N` of a thread: its first page when absent; null when not a page number. */
function pageParam(query: unknown): number | null {
  const parsed = ThreadPageQuery.safeParse(query);
  return parsed.success ? (parsed.data.page ?? 1) : null;
}

/** A later page is a page of its own: its own address, its own title. */
function headOf(found: ReaderThread): PageMeta {
  const { page } = found.window;
  if (page === 1) return found.meta;
  return {
    ...found.meta,
    title: `${found.meta.title} (page ${page})`,
    canonical: `${found.meta.canonical}?page=${page}`,
  };
}
/**
 * A published page may be kept a little while by a browser or a CDN, then asked again with its ETag (a 304 when
 * nothing changed): unpublishing or deleting shows within the minute.
 */
const PAGE_CACHE = 'public, max-age=30, must-revalidate';

const hashOf = (s: string) => createHash('sha256').update(s).digest('base64url').slice(0, 27);

/**
 * Rendered pages by what they show (the data and the head): rendering a thread's Markdown costs several times
 * serving its bytes, and most reads of a thread are of a version already rendered. A live thread's new turn
 * is new data, so a new entry; the least recently used go past a bound in entries and in bytes.
 */
class RenderedPages {
  // Kept as the bytes sent: a hit is written as it is, not encoded again (54 KB of a 30-turn page took 0.3 ms).
  private readonly pages = new Map<string, Buffer>();
  private bytes = 0;
  constructor(
    private readonly maxPages = 200,
    private readonly maxBytes = 32 * 2 ** 20,
  ) {}
  get(key: string, render: () => string): Buffer {
    const hit = this.pages.get(key);
    if (hit !== undefined) {
      this.pages.delete(key);
      this.pages.set(key, hit);
      return hit;
    }
    const html = Buffer.from(render());
    // A page too large to keep beside others is not kept (it would push every other out, itself too).
    if (html.length > this.maxBytes / 8) return html;
    this.pages.set(key, html);
    this.bytes += html.length;
    for (const [k, v] of this.pages) {
      if (this.pages.size <= this.maxPages && this.bytes <= this.maxBytes) break;
      this.pages.delete(k);
      this.bytes -= v.length;
    }
    return html;
  }
}

/** `etag`: a key already drawn from everything the page shows (no second hash of its bytes); else the bytes'. */
function send(res: Response, status: number, html: string | Buffer, etag?: string): void {
  // Express answers 304 itself when the request's If-None-Match holds this ETag. A page saying "try again" (503)
  // is kept by nobody: a cache in front would show it after the thread can be read.
  res
    .status(status)
    .set(
      status >= 500
        ? { 'Cache-Control': 'no-store' }
        : { 'Cache-Control': PAGE_CACHE, ETag: `"${etag ?? hashOf(String(html))}"` },
    )
    .type('html')
    .send(html);
}

/** A 503 in words, kept by nobody (the card's address is asked again, and must not be answered so from a cache). */
function tryLater(res: Response, seconds: number, text: string): void {
  res
    .status(503)
    .set({ 'Retry-After': String(seconds), 'Cache-Control': 'no-store' })
    .type('text')
    .send(text);
}

/** A page for a thread that is not there: readable, no script, with the status that says which. */
const MISSING = {
  404: [
    'No such conversation',
    'Nothing is published at this address. The link may be mistyped, or the author may have unpublished it.',
  ],
  410: [
    'This conversation was deleted',
    'Its author deleted it from their repository; it is no longer published.',
  ],
  indexing: [
    'This conversation is being read',
    "This server had not seen it yet and is reading its author's repository. Reload in a few seconds.",
  ],
  busy: [
    'This server is busy',
    'Many large conversations are being read right now. Reload in a few seconds.',
  ],
} as const;

function missingPage(res: Response, why: keyof typeof MISSING, base: string, assets: ReaderAssets): void {
  const [title, text] = MISSING[why];
  const status = why === 'indexing' || why === 'busy' ? 503 : why;
  const body = `<h1>${title}</h1><p>${text}</p><p><a href="/threads">All published conversations</a></p>`;
  const meta = { title, description: title, canonical: base, feed: `${base}/feeds/recent.atom` };
  send(res, status, readerPage({ meta, body, assets }));
}

/**
 * The thread (or its page), or why it cannot be read now: its author's repo is still being read (a thread this
 * server had not seen), or a large thread could not have a place to be read or parsed (ADR 0089).
 */
function threadNow(source: ReaderSource, requester: string, actor: string, rkey: string, page?: number) {
  return source.thread(actor, rkey, page, requester).catch((e: unknown) => {
    if (e instanceof AppError && e.code === 'INDEXING') return 'indexing' as const;
    if (e instanceof AppError && e.code === 'BUSY') return 'busy' as const;
    throw e;
  });
}

/** The reading pages, rendered on the server and hydrated by the reader bundle: a thread, an author, everyone. */
export function readerPages(deps: {
  source: ReaderSource;
  baseUrl: string;
  dir: string;
  cards?: LinkCards;
}): Router {
  const router = Router();
  const assets = assetsOf(deps.dir);
  const assetsKey = JSON.stringify(assets);
  const cards = deps.cards ?? new LinkCards();
  const rendered = new RenderedPages();
  // Loaded now rather than by the first reader after a start (the components and Markdown take a second or so).
  loadRenderer().catch(() => {});

  // The thread's link card: drawn from what it publishes, kept by what it shows, revalidated like the page.
  router.get('/profile/:actor/thread/:rkey/card.png', async (req, res) => {
    const { actor, rkey } = req.params;
    const found =
      ACTOR.test(actor) && RKEY.test(rkey)
        ? await threadNow(deps.source, requesterKey(req), actor, rkey)
        : null;
    if (found === 'indexing' || found === 'busy')
      return tryLater(res, 5, 'The conversation cannot be read just now.');
    if (!found || found === 'gone' || found === 'no-page') {
      res
        .status(found === 'gone' ? 410 : 404)
        .type('text')
        .send('No such conversation.');
      return;
    }
    const { key, png } = cards.get(found.card);
    res.set({ 'Cache-Control': PAGE_CACHE, ETag: `"${key}"` });
    if (req.fresh) {
      res.status(304).end();
      return;
    }
    const image = await png.catch(() => null);
    if (!image) return tryLater(res, 10, 'The picture could not be drawn just now.');
    res.type('png').send(image);
  });

  router.get('/profile/:actor/thread/:rkey', async (req, res) => {
    const { actor, rkey } = req.params;
    const base = deps.baseUrl;
    const page = pageParam(req.query);
    if (!ACTOR.test(actor) || !RKEY.test(rkey) || page === null) return missingPage(res, 404, base, assets);
    const found = await threadNow(deps.source, requesterKey(req), actor, rkey, page);
    if (found === 'indexing' || found === 'busy') {
      res.set('Retry-After', '5');
      return missingPage(res, found, base, assets);
    }
    if (!found || found === 'no-page') return missingPage(res, 404, base, assets);
    if (found === 'gone') return missingPage(res, 410, base, assets);
    const meta = headOf(found);
    const data = { page: 'thread', actor, rkey, thread: found.thread, window: found.window };
    const render = await loadRenderer();
    // What the page shows, and the bundle it loads (a new build's page is a new page): its key and its ETag.
    const key = hashOf(assetsKey + JSON.stringify([data, meta]));
    const html = rendered.get(key, () => readerPage({ meta, body: render(data), data, assets }));
    send(res, 200, html, key);
  });

  const list = async (actor: string | null, req: Request, res: Response) => {
    const found = await deps.source.list(actor, requesterKey(req));
    if (!found) return missingPage(res, 404, deps.baseUrl, assets);
    const data = { page: 'list', actor, sessions: found.sessions };
    const body = (await loadRenderer())(data);
    send(res, 200, readerPage({ meta: found.meta, body, data, assets }));
  };
  router.get('/threads', (req, res) => list(null, req, res));
  router.get('/profile/:actor', (req, res) =>
    ACTOR.test(req.params.actor)
      ? list(req.params.actor, req, res)
      : missingPage(res, 404, deps.baseUrl, assets),
  );
  return router;
}
