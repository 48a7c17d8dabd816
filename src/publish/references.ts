/**
 * What a turn's text points at: records (at-uris and bsky.app post links) and accounts (@handles and DIDs).
 * Pure: finds candidates; resolving them to CIDs and DIDs is the publisher's I/O.
 */
const AT_URI =
  /\bat:\/\/(did:[a-z]+:[a-zA-Z0-9._:%-]+|[a-zA-Z0-9.-]+\.[a-zA-Z]{2,})\/([a-zA-Z0-9.-]+)\/([a-zA-Z0-9._~:-]+)/g;
const POST_LINK = /\bhttps:\/\/bsky\.app\/profile\/([a-zA-Z0-9._:%-]+)\/post\/([a-zA-Z0-9._~:-]+)/g;
const MENTION =
  /(^|[\s(])@([a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+)/g;
const DID = /^did:[a-z]+:[a-zA-Z0-9._:%-]+$/;

/** A record reference as written: actor (handle or DID), collection, rkey. */
export interface RecordPointer {
  actor: string;
  collection: string;
  rkey: string;
}

/** Canonical key for a pointer before resolution: at://actor/collection/rkey. */
export const pointerKey = (p: RecordPointer) => `at://${p.actor}/${p.collection}/${p.rkey}`;

export function parseRecordPointer(raw: string): RecordPointer | undefined {
  const text = raw.trim();
  AT_URI.lastIndex = 0;
  POST_LINK.lastIndex = 0;
  const at = AT_URI.exec(text);
  if (at && at.index === 0) return { actor: at[1]!, collection: at[2]!, rkey: at[3]! };
  const link = POST_LINK.exec(text);
  const actor = link && link.index === 0 ? decoded(link[1]!) : undefined;
  return actor ? { actor, collection: 'app.bsky.feed.post', rkey: link![2]! } : undefined;
}

/** A link's percent-escaped handle; undefined when the escapes are not UTF-8 (such a link names nobody). */
function decoded(s: string): string | undefined {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}

export function findRecordPointers(text: string): RecordPointer[] {
  const found = new Map<string, RecordPointer>();
  for (const m of text.matchAll(AT_URI)) {
    const p = { actor: m[1]!, collection: m[2]!, rkey: m[3]! };
    found.set(pointerKey(p), p);
  }
  for (const m of text.matchAll(POST_LINK)) {
    const actor = decoded(m[1]!);
    if (!actor) continue;
    const p = { actor, collection: 'app.bsky.feed.post', rkey: m[2]! };
    found.set(pointerKey(p), p);
  }
  return [...found.values()];
}

/** @handles in the text (lower-cased, as handles compare). */
export function findMentions(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(MENTION)) found.add(m[2]!.toLowerCase());
  return [...found];
}

export const isDid = (s: string) => DID.test(s);
