import { TID } from '@atproto/common-web';
import fc from 'fast-check';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { atomFeed } from '../../src/appview/feeds.ts';
import type { SessionView } from '../../src/appview/read.ts';
import { indexRecords } from '../../src/appview/store.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { atomErrors } from '../support/atomValidator.ts';

// #30: a reader follows an author, or everything recent, from a feed reader; search engines find threads through
// the sitemap. Every value in them is text an author published, escaped whatever it holds.

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
let n = 0;

/** An author the index knows, with a verified handle (no network lookup), and one published thread. */
async function published(title: string, agents: { name: string; role?: string }[] = []) {
  const did = `did:plc:feeds${(++n).toString().padStart(19, '0')}`;
  const handle = `author${n}.test`;
  await app.db.sql`insert into index_actors (did, handle, verified_at) values (${did}, ${handle}, now())
    on conflict (did) do update set handle = excluded.handle, verified_at = now()`;
  const rkey = TID.nextStr();
  const createdAt = '2026-11-01T00:00:00.000Z';
  await indexRecords(app.db.sql, did, [
    {
      collection: 'click.aligned.chat.session',
      rkey,
      cid: CID,
      record: { $type: 'click.aligned.chat.session', title, createdAt, ...(agents.length ? { agents } : {}) },
    },
    {
      collection: 'click.aligned.chat.message',
      rkey: TID.nextStr(),
      cid: CID,
      record: {
        $type: 'click.aligned.chat.message',
        session: `at://${did}/click.aligned.chat.session/${rkey}`,
        role: 'user',
        text: 'Hello',
        createdAt,
      },
    },
  ]);
  return { did, handle, rkey, uri: `at://${did}/click.aligned.chat.session/${rkey}` };
}

const parser = new XMLParser({ ignoreAttributes: false, parseTagValue: false, trimValues: false });
type Entry = {
  id: string;
  title: { '#text': string } | string;
  link: { '@_href': string; '@_rel': string };
};
/** The feed's entries, once it is valid Atom (RFC 4287's schema and rules, by libxml2: test/support/atomValidator.ts). */
const entriesOf = (xml: string): Entry[] => {
  expect(atomErrors(xml)).toEqual([]);
  const feed = parser.parse(xml).feed as { entry?: Entry | Entry[] };
  return feed.entry === undefined ? [] : Array.isArray(feed.entry) ? feed.entry : [feed.entry];
};
/** Text as hostile as an author may publish: markup, Markdown, any Unicode, characters XML cannot hold. */
const hostile = fc
  .oneof(
    fc.string({ minLength: 1, maxLength: 80 }),
    fc.constantFrom(
      '<script>alert(1)</script>',
      '</title><entry>',
      '&amp; & &lt;',
      ']]>',
      '**bold** _x_ [a](b)',
      '<![CDATA[x]]><?pi?><!-- c -->',
    ),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
    // Characters XML cannot carry (controls, a lone surrogate), as any repo may hold; NUL the index refuses.
    fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
  )
  .filter((t) => !t.includes('\u0000'));
const text = (t: Entry['title']) => (typeof t === 'string' ? t : t['#text']);

it("an author's feed and the recent feed are valid Atom, with each title exactly as published", async () => {
  await fc.assert(
    fc.asyncProperty(hostile, hostile, hostile, async (title, name, role) => {
      const t = await published(title, [
        { name, role },
        { name: 'Ada <b>', role: 'Librarian & co' },
      ]);
      const res = await fetch(`${app.url}/profile/${t.handle}/feed.atom`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/atom\+xml/);
      const entries = entriesOf(await res.text());
      expect(entries).toHaveLength(1);
      expect(entries[0]!.id).toBe(`${app.running.url}/profile/${t.did}/thread/${t.rkey}`);
      // As published, less what no XML document can hold (a form feed a space, as a browser shows it);
      // whitespace at the ends is not meaningful to a reader.
      const fit = title
        .replaceAll('\f', ' ')
        .replace(/[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu, '');
      // XML's end-of-line handling makes a CR a line feed for any reader, so the comparison does too.
      const lines = (t: string) => t.replace(/\r\n?/g, '\n').trim();
      expect(lines(text(entries[0]!.title))).toBe(lines(fit) ? lines(fit) : 'Untitled conversation');
      expect([entries[0]!.link['@_rel'], entries[0]!.link['@_href']]).toEqual([
        'alternate',
        `${app.running.url}/profile/${t.did}/thread/${t.rkey}`,
      ]);
    }),
    { numRuns: 25 },
  );
  // Every hostile title above is in the recent feed at once.
  const recent = entriesOf(await (await fetch(`${app.url}/feeds/recent.atom`)).text());
  expect(recent.length).toBeGreaterThanOrEqual(25);
}, 120_000);

it('the validator refuses a feed broken in any of the ways a feed reader would', () => {
  const session = {
    uri: 'at://did:plc:abc/click.aligned.chat.session/3kabcdefghijk',
    indexedAt: '2026-11-02T00:00:00.000Z',
    turns: 2,
    author: { did: 'did:plc:abc', handle: 'a.test' },
    record: { title: 'A title', createdAt: '2026-11-01T00:00:00.000Z' },
  } as unknown as SessionView;
  const good = atomFeed({
    title: 'T',
    self: 'http://x.test/f.atom',
    base: 'http://x.test',
    sessions: [session],
  });
  expect(atomErrors(good)).toEqual([]);
  const broken: [string, string][] = [
    ['no feed id', good.replace(/<id>[^<]*<\/id>/, '')],
    ['no entry id', good.replace(/(<entry>)<id>[^<]*<\/id>/, '$1')],
    ['no feed updated', good.replace(/<updated>[^<]*<\/updated>/, '')],
    ['no entry updated', good.replace(/(<entry>.*)<updated>[^<]*<\/updated>/s, '$1')],
    ['no title', good.replace(/<title type="text">T<\/title>/, '')],
    ['a date with no offset', good.replace('2026-11-02T00:00:00.000Z', '2026-11-02T00:00:00')],
    ['not a date', good.replace('2026-11-02T00:00:00.000Z', 'yesterday')],
    ['no author anywhere', good.replace(/<author>.*<\/author>/s, '')],
    ['a title unescaped', good.replace('A title', 'A <b>title')],
    ['a relative id', good.replace(/<id>http:\/\/x.test\/f.atom<\/id>/, '<id>f.atom</id>')],
    [
      'an entry with neither content nor page',
      good.replace(/<link rel="alternate" type="text\/html" href="[^"]*\/thread\/[^"]*"\/>/, ''),
    ],
    ['an unknown Atom element', good.replace('<generator>', '<colour>red</colour><generator>')],
    ['another namespace', good.replace('http://www.w3.org/2005/Atom', 'http://www.w3.org/2005/Atom#')],
    [
      'an at:// URI as a link',
      good.replace('</entry>', '<link rel="related" href="at://did:plc:abc/x/y"/></entry>'),
    ],
  ];
  for (const [what, xml] of broken) {
    expect(xml, what).not.toBe(good);
    expect(atomErrors(xml), what).not.toEqual([]);
  }
});

it('the sitemap lists published threads; feeds are documents even to a browser; thread pages link their feed, canonical address and record', async () => {
  const t = await published('Sitemapped');
  const map = await (await fetch(`${app.url}/sitemap.xml`)).text();
  expect(XMLValidator.validate(map)).toBe(true);
  expect(map).toContain(`<loc>${app.running.url}/profile/${t.did}/thread/${t.rkey}</loc>`);
  const asBrowser = await fetch(`${app.url}/feeds/recent.atom`, { headers: { accept: 'text/html' } });
  expect(asBrowser.headers.get('content-type')).toMatch(/atom/);
  const unknown = await fetch(`${app.url}/profile/nobody.invalid/feed.atom`);
  expect(unknown.status).toBe(404);
});
