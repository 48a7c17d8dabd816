import { XMLBuilder } from 'fast-xml-parser';
import type { SessionView } from './read.ts';

/** Where a published thread is read on this instance: by DID, which never changes (a handle can). */
export const threadPath = (s: { uri: string }): string => {
  const [, , did, , rkey] = s.uri.split('/');
  return `/profile/${did}/thread/${rkey}`;
};

/**
 * Text fit for XML 1.0: what an author published may hold characters no XML document can (control characters,
 * a lone surrogate), escaped or not — a feed with one is refused whole by feed readers. Those are dropped, but a
 * form feed becomes a space: the cover reads it as a word break, as a browser shows it (redaction/fold.ts), and
 * dropped it would join the words either side into one a cover did not read.
 */
const xmlText = (s: string): string =>
  s.replaceAll('\f', ' ').replace(/[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu, '');

const title = (s: SessionView): string => {
  const t = (s.record as { title?: unknown }).title;
  return typeof t === 'string' && xmlText(t).trim() ? xmlText(t) : 'Untitled conversation';
};

/** "With Ada (Librarian) and Tomas": who the author talked to, from the session record (published text only). */
function summary(s: SessionView): string {
  const agents = (s.record as { agents?: { name?: unknown; role?: unknown }[] }).agents;
  const names = (Array.isArray(agents) ? agents : [])
    .filter((a) => typeof a?.name === 'string')
    .map((a) => (typeof a.role === 'string' && a.role ? `${a.name} (${a.role})` : String(a.name)));
  const turns = `${s.turns} turn${s.turns === 1 ? '' : 's'}`;
  if (!names.length) return `A conversation of ${turns}.`;
  const who = names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : names[0];
  return xmlText(`A conversation with ${who}, ${turns}.`);
}

// Every value goes in as text and comes out escaped (a title of `</title>` or `]]>` stays a title); no CDATA, no
// HTML: feed readers show titles and summaries as the author wrote them, never as markup.
const builder = new XMLBuilder({ ignoreAttributes: false, suppressEmptyNode: true, processEntities: true });
const XML_HEAD = '<?xml version="1.0" encoding="utf-8"?>\n';

/**
 * An Atom feed (RFC 4287) of published threads, newest first, for feed readers. `self` is the feed's own URL;
 * `base` this instance's public origin. Each entry's id is its page's canonical URL. Valid Atom: test/appview/feeds.test.ts
 * checks every feed against RFC 4287's schema and rules.
 */
export function atomFeed(o: { title: string; self: string; base: string; sessions: SessionView[] }): string {
  const updated = (o.sessions[0] ? new Date(o.sessions[0].indexedAt) : new Date(0)).toISOString();
  const entries = o.sessions.map((s) => {
    const page = `${o.base}${threadPath(s)}`;
    const createdAt = Date.parse((s.record as { createdAt?: string }).createdAt ?? '');
    return {
      id: page,
      title: { '@_type': 'text', '#text': title(s) },
      // Only the page: a record's at:// URI is no IRI (its authority, a DID, holds colons where RFC 3986 wants a
      // port), so a feed validator refuses it as a link; the page links the record itself.
      link: { '@_rel': 'alternate', '@_type': 'text/html', '@_href': page },
      updated: s.indexedAt,
      ...(Number.isNaN(createdAt) ? {} : { published: new Date(createdAt).toISOString() }),
      author: {
        name: xmlText(s.author.handle ? `@${s.author.handle}` : s.author.did),
        uri: `${o.base}/profile/${s.author.did}`,
      },
      summary: { '@_type': 'text', '#text': summary(s) },
    };
  });
  return (
    XML_HEAD +
    builder.build({
      feed: {
        '@_xmlns': 'http://www.w3.org/2005/Atom',
        id: o.self,
        title: { '@_type': 'text', '#text': xmlText(o.title) },
        updated,
        link: [
          { '@_rel': 'self', '@_type': 'application/atom+xml', '@_href': o.self },
          { '@_rel': 'alternate', '@_type': 'text/html', '@_href': o.base },
        ],
        generator: 'AgentsVille',
        entry: entries,
      },
    })
  );
}

/** A sitemap of published threads' pages (https://www.sitemaps.org/protocol.html). */
export function sitemap(base: string, threads: { uri: string; indexedAt: string }[]): string {
  return (
    XML_HEAD +
    builder.build({
      urlset: {
        '@_xmlns': 'http://www.sitemaps.org/schemas/sitemap/0.9',
        url: threads.map((t) => ({ loc: `${base}${threadPath(t)}`, lastmod: t.indexedAt })),
      },
    })
  );
}
