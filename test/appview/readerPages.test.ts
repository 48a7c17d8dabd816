import { TID } from '@atproto/common-web';
import fc from 'fast-check';
import { Window } from 'happy-dom';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LARGE_THREAD_BYTES } from '../../src/appview/fragments.ts';
import { indexRecords, removeRecord } from '../../src/appview/store.ts';
import {
  LARGE_PARSES_AT_ONCE,
  LARGE_PARSES_WAITING,
  parsesNow,
  parseThread,
} from '../../src/appview/threadParse.ts';
import { jsonForScript } from '../../src/web/readerPage.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { indexThread } from '../support/records.ts';

// #30: a thread, an author's list and everyone's list are rendered on the server — readable with no script, with
// the status, addresses and caching a crawler and a CDN go by — and every value in them is escaped.

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
let n = 0;
const createdAt = '2026-11-01T00:00:00.000Z';

type Turn = Record<string, unknown>;
/** An author the index knows (verified handle: no network lookup) and one published thread of these turns. */
async function published(title: string, turns: Turn[]) {
  const did = `did:plc:pages${(++n).toString().padStart(19, '0')}`;
  const handle = `reader${n}.test`;
  const { rkey, uri } = await indexThread(app.db.sql, { did, handle }, title, turns, createdAt);
  return { did, handle, rkey, uri, path: `/profile/${handle}/thread/${rkey}` };
}

const parse = (html: string) => {
  const window = new Window();
  window.document.write(html);
  return window.document;
};

it('a thread page holds the whole thread as HTML, with its addresses, card and caching', async () => {
  const t = await published('The map question', [
    { role: 'user', text: 'Is the **old map** right?' },
    {
      role: 'assistant',
      model: 'fake/fake-model',
      text: 'It is wrong; the vault code is ████████.',
      steps: [
        { name: 'search', summary: 'looked for maps' },
        { name: 'fetch', failed: true },
      ],
    },
    { role: 'user', withheld: true },
  ]);
  const res = await fetch(`${app.url}${t.path}`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  expect(res.headers.get('cache-control')).toBe('public, max-age=30, must-revalidate');
  const etag = res.headers.get('etag')!;
  expect(etag).toMatch(/^"[\w-]+"$/);
  expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
  const html = await res.text();
  const doc = parse(html);
  const turns = doc.querySelectorAll('#root ol.thread > li');
  expect(turns.length).toBe(3);
  expect(doc.querySelector('#root h1')!.textContent).toBe('The map question');
  expect(turns[0]!.querySelector('.speaker')!.textContent).toBe(`@${t.handle}`);
  expect(turns[0]!.querySelector('strong')!.textContent).toBe('old map');
  expect(turns[1]!.querySelector('.speaker')!.textContent).toBe('Ada');
  expect(turns[1]!.querySelector('.model')!.textContent).toBe('fake/fake-model');
  expect(turns[1]!.textContent).toContain('the vault code is ████████.');
  expect(turns[1]!.querySelector('.steps li.failed')!.textContent).toContain('fetch');
  expect(turns[1]!.querySelector('.steps')!.textContent).toContain('looked for maps');
  expect(turns[2]!.textContent).toContain('A turn happened here and was not published.');
  // The addresses: one canonical page (by DID), the record, the author's feed and the card's picture.
  const href = (sel: string) => doc.querySelector(sel)?.getAttribute('href');
  expect(href('link[rel=canonical]')).toBe(`${app.url}/profile/${t.did}/thread/${t.rkey}`);
  expect(href('link[rel=alternate]:not([type])')).toBe(t.uri);
  expect(href('link[type="application/atom+xml"]')).toBe(`${app.url}/profile/${t.did}/feed.atom`);
  const meta = (p: string) =>
    doc.querySelector(`meta[property="${p}"], meta[name="${p}"]`)?.getAttribute('content');
  expect(meta('twitter:card')).toBe('summary_large_image');
  expect(meta('og:image')).toBe(`${app.url}/profile/${t.did}/thread/${t.rkey}/card.png`);
  // Hydration's data is inert JSON; the only script that runs is a file of the server's own.
  const data = JSON.parse(doc.getElementById('reader-data')!.textContent!);
  expect(data.thread.messages).toHaveLength(3);
  for (const s of doc.querySelectorAll('script'))
    expect(s.getAttribute('type') === 'application/json' || (s.getAttribute('src') && !s.textContent)).toBe(
      true,
    );

  // Asked again with its ETag: nothing changed, nothing sent. (fetch would add `Cache-Control: no-cache` to a
  // conditional request, which asks the server not to answer 304; a browser revalidating sends max-age=0.)
  const again = await fetch(`${app.url}${t.path}`, {
    headers: { 'if-none-match': etag, 'cache-control': 'max-age=0' },
  });
  expect(again.status).toBe(304);
  expect(await again.text()).toBe('');
  // Served again from the rendered pages (kept as bytes): the same bytes, still said to be UTF-8.
  const hit = await fetch(`${app.url}${t.path}`);
  expect(hit.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(hit.headers.get('etag')).toBe(etag);
  expect(await hit.text()).toBe(html);

  // A turn published since (a live thread): the page shows it at once, under a new ETag — never a stale render.
  await indexRecords(app.db.sql, t.did, [
    {
      collection: 'click.aligned.chat.message',
      rkey: TID.nextStr(),
      cid: CID,
      record: {
        $type: 'click.aligned.chat.message',
        session: t.uri,
        createdAt,
        role: 'user',
        text: 'A new turn',
      },
    },
  ]);
  const grown = await fetch(`${app.url}${t.path}`, {
    headers: { 'if-none-match': etag, 'cache-control': 'max-age=0' },
  });
  expect(grown.status).toBe(200);
  expect(grown.headers.get('etag')).not.toBe(etag);
  expect(parse(await grown.text()).querySelectorAll('#root ol.thread > li')).toHaveLength(4);
});

it("a thread's link card is a PNG, revalidated by what it shows; none for a thread that is not there", async () => {
  const t = await published('Card thread', [{ role: 'user', text: 'The code is ████████.' }]);
  const res = await fetch(`${app.url}/profile/${t.did}/thread/${t.rkey}/card.png`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('image/png');
  const png = Buffer.from(await res.arrayBuffer());
  expect(png.subarray(1, 4).toString()).toBe('PNG');
  const again = await fetch(`${app.url}/profile/${t.did}/thread/${t.rkey}/card.png`, {
    headers: { 'if-none-match': res.headers.get('etag')!, 'cache-control': 'max-age=0' },
  });
  expect(again.status).toBe(304);
  await removeRecord(app.db.sql, t.uri);
  expect((await fetch(`${app.url}/profile/${t.did}/thread/${t.rkey}/card.png`)).status).toBe(410);
}, 60_000);

it('a thread that never was is 404, one deleted is 410; both readable pages that run no script', async () => {
  const t = await published('Soon gone', [{ role: 'user', text: 'Hello' }]);
  await removeRecord(app.db.sql, t.uri);
  const gone = await fetch(`${app.url}${t.path}`);
  expect(gone.status).toBe(410);
  const html = await gone.text();
  expect(html).toContain('This conversation was deleted');
  expect(html).not.toContain('<script');
  // (A key the index never saw sends the server to the author's repo, which this test's network cannot reach.)
  const other = await published('Still here', [{ role: 'user', text: 'Hello' }]);
  const missing = await fetch(`${app.url}/profile/${other.did}/thread/${TID.nextStr()}`);
  expect(missing.status).toBe(404);
  expect(await missing.text()).toContain('No such conversation');
  expect((await fetch(`${app.url}/profile/${other.handle}/thread/not-a-key`)).status).toBe(404);
});

it('a large thread that cannot have a parse now is a 503 page saying the server is busy, and reads once it can', async () => {
  // 40 turns of some 42 KB each: 1.7 MB, a large thread (its parse takes a place).
  const long = Array.from({ length: 40 }, (_, i) => ({ role: 'user', text: `${i}`.padEnd(14_000, '█') }));
  const t = await published('Busy hour', long);
  // Every place taken by other authors' large parses, held.
  const text = JSON.stringify({ session: {}, messages: [{ text: 'a'.repeat(LARGE_THREAD_BYTES) }] });
  const body = Buffer.from(text);
  const bounds = Uint32Array.of(text.indexOf('{}'), text.indexOf('{}') + 2, 26, text.length - 2);
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const held = Array.from({ length: LARGE_PARSES_AT_ONCE }, (_, i) =>
    parseThread(`${t.did}${i}`, body, bounds, { pause: () => gate, sliceBytes: 1 }),
  );
  await expect.poll(() => parsesNow()).toBe(LARGE_PARSES_AT_ONCE);
  // Every line together full (this author's parses): the page's own parse is refused at once.
  const waiting = Array.from({ length: LARGE_PARSES_WAITING }, () => parseThread(t.did, body, bounds));
  // (Waiting on real timers: on a slow machine one may be refused before its turn, which is not this test's.)
  for (const w of waiting) w.catch(() => {});
  const busy = await fetch(`${app.url}${t.path}`);
  expect(busy.status).toBe(503);
  expect(busy.headers.get('retry-after')).toBe('5');
  expect(busy.headers.get('cache-control')).toBe('no-store');
  const html = await busy.text();
  expect(html).toContain('This server is busy');
  expect(html).not.toContain('Busy hour');
  // The reader's API says so too: 503 BUSY (the reader exceeded nothing).
  const api = await fetch(`${app.url}/api/reader/threads/${t.did}/${t.rkey}`);
  expect(api.status).toBe(503);
  expect(((await api.json()) as { error: { code: string } }).error.code).toBe('BUSY');
  // Its link card too: a 503 in words, kept by nobody.
  const card = await fetch(`${app.url}/profile/${t.did}/thread/${t.rkey}/card.png`);
  expect(card.status).toBe(503);
  expect(card.headers.get('cache-control')).toBe('no-store');
  expect(await card.text()).toBe('The conversation cannot be read just now.');
  release();
  await Promise.allSettled([...held, ...waiting]);
  const now = await fetch(`${app.url}${t.path}`);
  expect(now.status).toBe(200);
  expect(await now.text()).toContain('Busy hour');
});

it("an author's list and everyone's list are rendered too", async () => {
  const t = await published('Listed thread', [{ role: 'user', text: 'Hello' }]);
  const mine = await fetch(`${app.url}/profile/${t.handle}`);
  expect(mine.status).toBe(200);
  const doc = parse(await mine.text());
  expect(doc.querySelector('#root h1')!.textContent).toBe(`Conversations published by ${t.handle}`);
  const link = [...doc.querySelectorAll('#root a.title')].find((a) => a.textContent === 'Listed thread');
  expect(link?.getAttribute('href')).toBe(`/profile/${t.handle}/thread/${t.rkey}`);
  expect((await fetch(`${app.url}/threads`)).status).toBe(200);
});

it('JSON for a script block cannot end it or open markup, and reads back the same', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.string(), (v, s) => {
      const value = { v, s: `${s}</script><!--<script>${s}` };
      const out = jsonForScript(value);
      expect(out).not.toMatch(/[<>&\u2028\u2029]/);
      expect(JSON.parse(out)).toEqual(JSON.parse(JSON.stringify(value)));
    }),
  );
});

/** What published text may hold: markup, Markdown, and any Unicode. */
const hostile = fc.oneof(
  fc.string({ minLength: 1, maxLength: 60 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
  fc.constantFrom(
    '<script>window.pwned=1</script>',
    '</script><img src=x onerror=alert(1)>',
    '"><svg onload=alert(1)>',
    "' onmouseover='alert(1)",
    '<!-- x --><iframe src="javascript:alert(1)">',
    '[click](javascript:alert(1)) ![i](http://x/y.png)',
    '**bold** <b>b</b> `</title>`',
    '\u2028\u2029 ‮ rtl 🧑‍🚀',
  ),
);

it('whatever a title or a text holds, the served page has no element or attribute it did not put there', async () => {
  await fc.assert(
    fc.asyncProperty(hostile, hostile, async (title, text) => {
      // The index keeps what the lexicon allows: no NUL.
      const clean = (s: string) => s.replaceAll('\u0000', '') || 'x';
      const t = await published(clean(title), [{ role: 'user', text: clean(text) }]);
      const html = await (await fetch(`${app.url}${t.path}`)).text();
      const doc = parse(html);
      // Exactly the page's own scripts, and no handler or javascript: link anywhere.
      expect(doc.querySelectorAll('script').length).toBeLessThanOrEqual(2);
      expect(doc.querySelectorAll('img, svg, iframe, object, embed, b, base, form').length).toBe(0);
      for (const el of doc.querySelectorAll('*'))
        for (const a of el.attributes) {
          expect(a.name.startsWith('on')).toBe(false);
          expect((a.value ?? '').trim().toLowerCase().startsWith('javascript:')).toBe(false);
        }
      expect(doc.querySelectorAll('head title').length).toBe(1);
      expect(doc.querySelector('#root h1')!.textContent).toBe(clean(title));
      expect(JSON.parse(doc.getElementById('reader-data')!.textContent!).thread.session.title).toBe(
        clean(title),
      );
    }),
    { numRuns: 40 },
  );
}, 120_000);
