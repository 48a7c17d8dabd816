import type { Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { stripMarkdown } from '../parts/index.ts';

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

/**
 * The words of a search box: letters and digits only, lower-cased, at most MAX_WORDS (each word is a list the
 * index reads; eight find any Message a person remembers).
 */
export const MAX_WORDS = 8;
/** A prefix shorter than this matches most of a language: a shorter last word is matched whole. */
export const MIN_PREFIX = 3;
export function searchWords(q: string): string[] {
  return q
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .slice(0, MAX_WORDS);
}

/**
 * The words as a tsquery: each must appear, the last one also as a prefix (so results come while typing).
 * Words are only letters and digits, so no input can be tsquery syntax.
 */
export function toTsquery(q: string | string[]): string | null {
  const words = typeof q === 'string' ? searchWords(q) : q;
  if (!words.length) return null;
  return words.map((w, i) => (i === words.length - 1 && isPrefix(w) ? `${w}:*` : w)).join(' & ');
}

const isPrefix = (w: string) => [...w].length >= MIN_PREFIX;

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
    words.some((q, i) => w === q || (i === last && isPrefix(q) && w.startsWith(q)));
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

/**
 * A result's snippet as a person reads it: the Message's words without their Markdown marks (the transcript
 * draws **three** as bold; a snippet showing the asterisks reads like source), then marked around the match.
 */
export const snippetFor = (text: string, words: string[]) => snippetOf(stripMarkdown(text), words);

/** Matches ranked at most: a search matching more ranks this many of them (ranking reads each one's words). */
const CANDIDATES = 1000;
/** A Player with fewer Messages than this is searched through their own Messages, not the whole index. */
const FEW_MESSAGES = 20_000;

/**
 * How the search reads, chosen per Player (ADR 0057). The word index holds every Player's Messages: a common word
 * or a short prefix matches another Player's 200,000, which a Player with a few hundred should never pay for.
 * So a Player with few Messages is searched through the index of their Conversations' Messages (at most
 * FEW_MESSAGES rows read); one with many through the word index. Either way at most CANDIDATES matches are
 * ranked, and the statement is stopped at 2 s.
 */
async function plan(tx: Sql, playerId: string): Promise<void> {
  await tx`set local statement_timeout = 2000`;
  await tx`set local enable_seqscan = off`;
  const [mine] = await tx<{ n: number }[]>`
    select count(*)::int as n from (
      select 1 from messages m join conversations c on c.id = m.conversation_id and c.player_id = ${playerId}
      limit ${FEW_MESSAGES + 1}) x`;
  if (mine!.n <= FEW_MESSAGES) await tx`set local enable_bitmapscan = off`;
  else await tx`set local enable_seqscan = on`;
}

const statement = (tx: Sql, playerId: string, query: string, limit: number) => tx`
    with matched as materialized (
      select m.id, m.seq, m.tsv
      from messages m
      join conversations c on c.id = m.conversation_id and c.player_id = ${playerId}
      -- The branch shown (ADR 0042): a result opens where the Player can see it.
      where m.tsv @@ to_tsquery('simple', ${query}) and m.on_path
      limit ${CANDIDATES}
    ), hits as (
      select id, seq, ts_rank_cd(tsv, to_tsquery('simple', ${query})) as rank
      from matched order by rank desc, seq desc limit ${limit}
    )
    select m.id as "messageId", m.seq::text, m.role, m.npc_name as "npcName", m.created_at as "createdAt",
      m.conversation_id as "conversationId", c.title as "conversationTitle", left(m.text, 20000) as text
    from hits h join messages m on m.id = h.id join conversations c on c.id = m.conversation_id
    order by h.rank desc, h.seq desc`;

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
  const rows = await sql
    .begin(async (t) => {
      const tx = t as unknown as Sql;
      await plan(tx, playerId);
      return (await statement(tx, playerId, query, limit)) as unknown as (Omit<SearchHit, 'snippet'> & {
        text: string;
      })[];
    })
    .catch((e: { code?: string }) => {
      if (e.code === '57014')
        throw new AppError('SEARCH_TOO_BROAD', 'That search matched too much to rank in time: add a word.');
      throw e;
    });
  return rows.map(({ text, ...hit }) => ({ ...hit, snippet: snippetFor(text, words) }));
}

/** The plan PostgreSQL would run for a search (for tests: which index it reads). */
export async function explainSearch(sql: Sql, playerId: string, q: string): Promise<string> {
  const query = toTsquery(q);
  if (!query) return '';
  return sql.begin(async (t) => {
    const tx = t as unknown as Sql;
    await plan(tx, playerId);
    const rows = await tx<{ 'QUERY PLAN': string }[]>`explain ${statement(tx, playerId, query, 50)}`;
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}
