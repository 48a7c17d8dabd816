import type { Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';

/** One hit: where it is, and its text around the matched words, marked. */
export interface SearchHit {
  conversationId: string;
  conversationTitle: string | null;
  messageId: string;
  seq: string;
  role: 'player' | 'npc';
  npcName: string | null;
  createdAt: Date;
  /** The snippet as runs of text, `hit` on the matched words: the browser renders them, never as HTML. */
  snippet: { text: string; hit: boolean }[];
}

/** The words of a search box: letters and digits only, lower-cased, at most 12. */
export function searchWords(q: string): string[] {
  return q
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .slice(0, 12);
}

/**
 * The words as a tsquery: each must appear, the last one also as a prefix (so results come while typing).
 * Words are only letters and digits, so no input can be tsquery syntax.
 */
export function toTsquery(q: string | string[]): string | null {
  const words = typeof q === 'string' ? searchWords(q) : q;
  if (!words.length) return null;
  // A one-letter prefix matches most of a language: only a word of two letters or more is also a prefix.
  return words.map((w, i) => (i === words.length - 1 && w.length > 1 ? `${w}:*` : w)).join(' & ');
}

const WORD = /[\p{L}\p{N}]+/gu;
const BEFORE = 80;
const AFTER = 160;

/**
 * The text around the first matched word, about 240 characters, cut at word boundaries, with every matched
 * word marked. Done here rather than with ts_headline, which drops anything that parses as an HTML tag — and
 * Players paste code.
 */
export function snippetOf(text: string, words: string[]): { text: string; hit: boolean }[] {
  const last = words.length - 1;
  const matches = (w: string) =>
    words.some((q, i) => w === q || (i === last && q.length > 1 && w.startsWith(q)));
  const hits: [number, number][] = [];
  for (const m of text.matchAll(WORD))
    if (matches(m[0].toLowerCase())) hits.push([m.index, m.index + m[0].length]);
  const first = hits[0]?.[0] ?? 0;
  let from = Math.max(0, first - BEFORE);
  let to = Math.min(text.length, first + AFTER);
  // Whole words at the edges.
  while (from > 0 && /[\p{L}\p{N}]/u.test(text[from - 1]!)) from--;
  while (to < text.length && /[\p{L}\p{N}]/u.test(text[to]!)) to++;
  const runs: { text: string; hit: boolean }[] = [];
  let at = from;
  const push = (t: string, hit: boolean) => t && runs.push({ text: t, hit });
  if (from > 0) push('…', false);
  for (const [a, b] of hits) {
    if (a < from || b > to) continue;
    push(text.slice(at, a), false);
    push(text.slice(a, b), true);
    at = b;
  }
  push(text.slice(at, to), false);
  if (to < text.length) push('…', false);
  return runs;
}

/** A Player's Messages that hold every word, best first (ranked by cover density, newer first on ties). */
export async function searchMessages(
  sql: Sql,
  playerId: string,
  q: string,
  limit: number,
): Promise<SearchHit[]> {
  const words = searchWords(q);
  const query = toTsquery(words);
  if (!query) return [];
  // A common word across a long history makes ranking read many rows: bounded like any request's work.
  const rows = await sql
    .begin(async (tx) => {
      await tx`set local statement_timeout = 2000`;
      return tx<(Omit<SearchHit, 'snippet'> & { text: string })[]>`
    with hits as (
      select m.id, m.seq, m.role, m.npc_name, m.created_at, m.text, m.conversation_id, c.title,
        ts_rank_cd(m.tsv, q) as rank
      from messages m
      join conversations c on c.id = m.conversation_id and c.player_id = ${playerId}
      cross join to_tsquery('simple', ${query}) q
      -- The branch shown (ADR 0042): a result opens where the Player can see it.
      where m.tsv @@ q and m.on_path
      order by rank desc, m.seq desc
      limit ${limit}
    )
    select id as "messageId", seq::text, role, npc_name as "npcName", created_at as "createdAt",
      conversation_id as "conversationId", title as "conversationTitle",
      left(text, 20000) as text
    from hits order by rank desc, seq desc`;
    })
    .catch((e: { code?: string }) => {
      if (e.code === '57014')
        throw new AppError(
          503,
          'SEARCH_TOO_BROAD',
          'That search matched too much to rank in time: add a word.',
        );
      throw e;
    });
  return rows.map(({ text, ...hit }) => ({ ...hit, snippet: snippetOf(text, words) }));
}
