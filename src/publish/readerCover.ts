import type { Sql } from '../db/index.ts';
import { type Cover, coverBounds, makeCover, REDACTION_BAR } from '../redaction/index.ts';

/**
 * What the reader shows beside a thread published from here is looked up when it is read (a linked post's text
 * now, a mentioned account's handle now) and was never in a record: the Conversation's cover is applied to it
 * too, so a word the Player covered does not come back through someone else's post. Given to the reader (app.ts
 * wires it), as a session's at-uri to the cover of the Conversation published under it; null for a thread
 * published from elsewhere (its author's covered words never left that server) or with nothing covered.
 *
 * Covers are kept, so an anonymous reader's every read does not pay for making one over all the Player's words
 * (10,000 of them take 170 ms). A kept cover is used only while the draft is as it was made from (its updated_at,
 * read on every read, so a word covered since takes effect at once on every instance), for at most KEEP_MS (a
 * cover remembers the strings it found clean, at most REMEMBER of them), and the kept covers hold at most
 * MAX_NEEDLES needles between them, least recently read dropped first.
 */
export const KEEP_MS = 60_000;
export const MAX_NEEDLES = 50_000;
const MAX_COVERS = 256;
const REMEMBER = 2_000;

/** A session's at-uri to its cover; `held` says what is kept (the count the bounds read, and a recount). */
export type ReaderCover = ((uri: string) => Promise<Cover | null>) & {
  held(): { needles: number; covers: number; counted: number };
};

interface Kept {
  at: string;
  made: number;
  cover: Cover | null;
}

export function readerCover(sql: Sql, o: { now?: () => number; maxNeedles?: number } = {}): ReaderCover {
  const { now = Date.now, maxNeedles = MAX_NEEDLES } = o;
  const kept = new Map<string, Kept>();
  let needles = 0;
  const size = (k: Kept) => k.cover?.needles.length ?? 0;
  const drop = (uri: string) => {
    const k = kept.get(uri);
    if (k) needles -= size(k);
    kept.delete(uri);
  };
  // Kept (again) as the most recently read, counted once whatever another read did meanwhile; then the least
  // recently read dropped until the bounds hold.
  const keep = (uri: string, k: Kept) => {
    drop(uri);
    kept.set(uri, k);
    needles += size(k);
    for (const [old] of kept) {
      if (old === uri || (needles <= maxNeedles && kept.size <= MAX_COVERS)) break;
      drop(old);
    }
  };
  const coverOf = async (uri: string): Promise<Cover | null> => {
    const [, , did, , rkey] = uri.split('/');
    if (!did || !rkey) return null;
    const mine = kept.get(uri);
    const fresh = mine && now() - mine.made < KEEP_MS ? mine.at : '';
    // The words only when the kept cover will not do: one statement either way.
    const [row] = await sql<{ at: string; words: Record<string, string[]> | null }[]>`
      select d.updated_at::text as at, case when d.updated_at::text = ${fresh} then null else d.words end as words
      from publications p join publication_drafts d using (conversation_id)
      where p.did = ${did} and p.session_rkey = ${rkey}`;
    if (!row) {
      drop(uri);
      return null;
    }
    if (row.words === null && mine) {
      keep(uri, mine);
      return mine.cover;
    }
    const words = new Set(Object.values(row.words ?? {}).flat());
    const made: Kept = { at: row.at, made: now(), cover: words.size ? coverFor(words) : null };
    keep(uri, made);
    return made.cover;
  };
  return Object.assign(coverOf, {
    held: () => ({
      needles,
      covers: kept.size,
      counted: [...kept.values()].reduce((n, k) => n + size(k), 0),
    }),
  });
}

/**
 * A cover of these words, or, for words past the bounds a publish now keeps to (a draft stored before them), one
 * that covers every string whole: what is looked up is then not shown at all, rather than a cover costing seconds
 * made for anonymous readers.
 */
function coverFor(words: Set<string>): Cover {
  // A selection covers at most two words (its own and its merged run's): half the words is the fewest selections.
  if (coverBounds(Math.ceil(words.size / 2), words).within) return makeCover(words, { remember: REMEMBER });
  const whole = (s: string) => (s ? [{ start: 0, end: s.length }] : []);
  return { needles: [], find: whole, matches: whole, apply: (s) => (s ? REDACTION_BAR : s) };
}
