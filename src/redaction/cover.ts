import { readsAsMarkdown } from '../markdown/index.ts';
import { type Apart, apart } from './apart.ts';
import { asciiSkeleton, type Candidates, candidates, READINGS_DIFFER } from './candidates.ts';
import {
  ASCII,
  DECODABLE,
  decodedText,
  type Folded,
  fold,
  hasOtherDigits,
  LINK_DESTINATION,
  UNSPACED,
  unspaced,
} from './fold.ts';
import { shownText } from './markdown.ts';
import { mergeSpans, REDACTION_BAR, type Span } from './spans.ts';

/**
 * The covering pass: a covered word is covered everywhere. Matching is on a folded form of both sides, so
 * what a reader would recognise as the same word is caught: compatibility forms (full-width letters,
 * ligatures), accents and letters with strokes (ł, ø, æ), case (including ß/SS), apostrophes of every kind;
 * invisible characters (joiners, BOMs, fillers) are ignored, and white space, dashes and underscores all read
 * as one word break (fold.ts). What a reader decodes is decoded first: Markdown's emphasis, code and link
 * brackets and its backslash escapes are invisible, character references (`&#77;`, `&amp;`) and percent-escapes
 * (`%20`, `12+Maple+Street`) read both as what they stand for and as written (prose shows `%7a` as it is), and a
 * link's destination and title both as text and as if they were not there (`[12 Maple](…) Street` shows "12 Maple
 * Street").
 * Look-alike letters (small capitals, ⒫, 🅟,
 * Cyrillic "р") read as the Latin ones (lookalikes.ts), and letters spelled out one by one with punctuation
 * between ("P-E-L-I-C-A-N", "P.E.L.I.C.A.N") as the word. Where Markdown may split a covered word (candidates.ts),
 * the string is also read as the reader's Markdown renderer shows it (markdown.ts) and the source that showed
 * the word is covered. Matching is by substring, not whole words: covering too much is visible in the preview;
 * too little leaks. A match inside a word covers the whole word (ADR 0105): "████████ual" spelled "annual"
 * around a covered "Ann".
 */

const ASCII_BREAKS = /[ \t\n\r_+-]+/g;
const ASCII_MARKS = /[*`~[\]]/g;
/** What a needle keeps at its core: not the spaces, punctuation and symbols at its edges. */
const EDGES = /^[ \p{P}\p{S}]+|[ \p{P}\p{S}]+$/gu;
const SYMBOL = /\p{S}/u;

/**
 * Letters spelled out one by one, with up to three spaces or punctuation marks between ("p-e-l-i-c-a-n"); a
 * letter that folds to two (ß, æ, œ) counts as one.
 */
const SPELLED =
  /(?<![\p{L}\p{N}])(?:ss|ae|oe|[\p{L}\p{N}])(?:[^\p{L}\p{N}\u2588]{1,3}(?:ss|ae|oe|[\p{L}\p{N}])(?![\p{L}\p{N}])){2,}/gu;
const NOT_LETTER = /[^\p{L}\p{N}]/gu;
const LETTER = /[\p{L}\p{N}]/u;
const squash = (m: string) => m.replace(NOT_LETTER, '');

/** `f` with the letters of each spelled-out word joined; null when it has none. */
function spelled(f: Folded): Folded | null {
  let out: Folded | null = null;
  let last = 0;
  const copy = (i: number) => {
    out!.text += f.text[i];
    out!.from.push(f.from[i]!);
    out!.to.push(f.to[i]!);
  };
  for (const m of f.text.matchAll(SPELLED)) {
    out ??= { text: '', from: [], to: [] };
    for (let i = last; i < m.index; i++) copy(i);
    for (let i = m.index; i < m.index + m[0].length; i++) if (LETTER.test(f.text[i]!)) copy(i);
    last = m.index + m[0].length;
  }
  if (out) for (let i = last; i < f.text.length; i++) copy(i);
  return out;
}

/** What the reader's Markdown renderer shows of `s`, folded, mapped to `s`. */
function rendered(s: string): Folded[] {
  const plain = shownText(s);
  // With the numbers the reader adds (an ordered list's, footnotes'), and without, as its text content has them.
  return [plain, ...(plain.numbered ? [plain.numbered] : [])].flatMap((shown) => {
    // The renderer decodes references and escapes but shows a percent-escape as written: read both ways.
    const folds = [fold(shown.text)];
    if (DECODABLE.test(shown.text)) folds.push(fold(shown.text, { decode: false }));
    if (hasOtherDigits(shown.text)) folds.push(fold(shown.text, { digits: true }));
    return folds.map((f) => ({
      text: f.text,
      from: f.from.map((i) => shown.from[i]!),
      to: f.to.map((i) => shown.to[i - 1]!),
    }));
  });
}

/**
 * The needles for words a redaction covered: their core (without the spaces, punctuation and symbols at the
 * edges, so "PELICAN-7731," also finds "pelican-7731."), and the whole selection when it has more than
 * punctuation (so "hunter2$%" leaves no "$%" beside a bar, and "🦩" alone is covered too).
 */
export function needlesOf(words: string): string[] {
  // Digits of other scripts both as the letters they look like and as digits, as texts are read (`search`).
  const seen = decodedText(words);
  const folds = hasOtherDigits(seen) ? [fold(words), fold(words, { digits: true })] : [fold(words)];
  // "山田 太郎" also as "山田太郎", as texts are read with such breaks gone (`unspaced`), so both spellings are
  // found; and as written, for a text whose breaks `unspaced` cannot place (a spelling decoded: "&#23665;").
  const joined = UNSPACED.test(seen) ? folds.flatMap((f) => unspaced(f, words) ?? []) : [];
  return [...new Set([...folds, ...joined].flatMap(needlesIn))];
}

function needlesIn(folded: Folded): string[] {
  const whole = folded.text.trim();
  const core = whole.replace(EDGES, '');
  const out = core ? [core] : [];
  // The whole too when its edges hold symbols, or it is nothing but symbols; never for mere punctuation.
  const edges = whole.replace(core, '');
  if (whole !== core && (core ? SYMBOL.test(edges) : SYMBOL.test(whole))) out.push(whole);
  return out;
}

export interface Cover {
  /** The folded needles, longest first. Empty: nothing is covered. */
  readonly needles: readonly string[];
  /** Every place in `s` that shows a covered word, merged, in order. */
  find(s: string): Span[];
  /**
   * Where the covered words themselves show in `s`, not widened to their words' edges: what a phrase the Player
   * types selects (a selection stored as "Joanne" for a typed "Ann" would cover Joanne, and leave Ann).
   */
  matches(s: string): Span[];
  /** `s` with every covered place (and the given spans) replaced by one bar per merged run. */
  apply(s: string, spans?: readonly Span[]): string;
}

/** A cover for these words (the texts under redactions); words that fold to nothing are dropped. */
export function makeCover(words: Iterable<string>, options: { remember?: number } = {}): Cover {
  const set = new Set<string>();
  for (const w of words) for (const n of needlesOf(w)) set.add(n);
  const needles = [...set].sort((a, b) => b.length - a.length);
  const maySplit = candidates(needles);
  const mayBeApart = apart(needles);
  // Strings this cover found showing nothing: a publish covers each turn's text, then every string of every record
  // again, most of them that same text (half the covering pass's time). Exact strings only, held for one plan, or
  // at most `remember` of them in a cover kept across requests.
  const clean = new Set<string>();
  const remember = options.remember ?? Number.POSITIVE_INFINITY;
  const matches = (s: string): Span[] => {
    if (!needles.length || !s || clean.has(s)) return [];
    const hits = search(s, needles, maySplit, mayBeApart);
    if (!hits.length) {
      if (clean.size >= remember) clean.clear();
      clean.add(s);
    }
    return hits;
  };
  const find = (s: string): Span[] => {
    const hits = matches(s);
    return hits.length ? toWordEdges(s, hits) : hits;
  };
  return {
    needles,
    find,
    matches,
    apply(s, spans = []) {
      const all = spans.length ? [...find(s), ...spans] : find(s);
      if (!all.length) return s;
      // A bar where Markdown was can make the rest read differently (an emphasis or link no longer closed):
      // covered again until nothing shows, and wholly if that does not settle.
      let out = applySpans(s, all);
      for (let round = 0; round < 4; round++) {
        const more = find(out);
        if (!more.length) return out;
        out = applySpans(out, more);
      }
      return find(out).length ? REDACTION_BAR : out;
    },
  };
}

/** Every place in `s` that shows one of `needles`, merged, in order. */
function search(s: string, needles: readonly string[], maySplit: Candidates, mayBeApart: Apart): Span[] {
  let parse: boolean | undefined;
  // Most strings hold no covered word: a cheap look first (the same fold, without the index map, for the
  // printable ASCII that most text is), and the full fold only where a needle may be.
  if (ASCII.test(s) && !DECODABLE.test(s)) {
    // As the fold reads it: marks gone, breaks one space; and again without link destinations.
    const lower = s.toLowerCase();
    const quick = lower.replace(ASCII_MARKS, '').replace(ASCII_BREAKS, ' ');
    const shown = s.includes('](')
      ? lower.replace(LINK_DESTINATION, '').replace(ASCII_MARKS, '').replace(ASCII_BREAKS, ' ')
      : quick;
    const joined = quick.replace(SPELLED, squash);
    parse =
      maySplit(asciiSkeleton(lower)) ||
      (READINGS_DIFFER.test(lower) && maySplit(asciiSkeleton(lower, 'kept'))) ||
      mayBeApart(s, [quick, shown === quick ? undefined : shown]);
    if (!parse && !needles.some((n) => quick.includes(n) || shown.includes(n) || joined.includes(n)))
      return [];
  }
  const written = fold(s, { withSkeleton: parse === undefined });
  // As a reader sees it, references and escapes decoded: "&#1777;" is a Persian 1, "&#23665;" is 山.
  const seen = decodedText(s);
  const digitsToo = hasOtherDigits(seen);
  // A spelling a reader may see as written, not decoded (a percent-escape in prose): "%7a^b" shows "a^b".
  const literal = DECODABLE.test(s)
    ? fold(s, { withSkeleton: parse === undefined, decode: false })
    : undefined;
  // As written (a link's destination is text in the record), as a reader shows it without the link's
  // destination, and as the reader's Markdown renderer shows it; each also with spelled-out words joined.
  const views = literal ? [written, literal] : [written];
  const unlinked = s.includes('](') ? fold(s, { hideLinks: true }) : undefined;
  if (unlinked) views.push(unlinked);
  if (digitsToo) views.push(fold(s, { digits: true }));
  const split =
    parse ??
    (maySplit(written.skeleton!) ||
      (digitsToo && maySplit(fold(s, { withSkeleton: true, digits: true }).skeleton!)) ||
      (literal !== undefined && maySplit(literal.skeleton!)) ||
      (READINGS_DIFFER.test(s) && maySplit(fold(s, { withSkeleton: true, reading: 'kept' }).skeleton!)) ||
      mayBeApart(s, [written.text, literal?.text, unlinked?.text]));
  // Past the parser's bounds the reader shows the text as written (src/markdown): what it shows is `written`.
  if (split && readsAsMarkdown(s)) views.push(...rendered(s));
  for (const v of [...views]) {
    const joined = spelled(v);
    if (joined) views.push(joined);
  }
  if (UNSPACED.test(seen))
    for (const v of [...views]) {
      const together = unspaced(v, s);
      if (together) views.push(together);
    }
  const hits: Span[] = [];
  for (const f of views) {
    for (const needle of needles) {
      for (let at = f.text.indexOf(needle); at >= 0; at = f.text.indexOf(needle, at + 1)) {
        // The rendered view maps some characters to a whole node's source ("🖼 ", what it could not place).
        let start = f.from[at]!;
        let end = f.to[at]!;
        for (let k = at + 1; k < at + needle.length; k++) {
          start = Math.min(start, f.from[k]!);
          end = Math.max(end, f.to[k]!);
        }
        hits.push({ start, end });
      }
    }
  }
  return mergeSpans(hits, s.length);
}

/**
 * What a word is made of, as a reader sees one: letters (styled ones too, 𝐮𝐚𝐥), digits and marks, and what does
 * not show between them (invisible characters, a soft hyphen, Markdown's `*`, `~~` and code marks; an underscore
 * inside a word is shown, and reads as a break, as in a tool's name "zephyr_station__lookup"): where a match
 * ends inside a run of them, the bar goes on to the run's end, so the rest of the word cannot spell what it
 * covers. Scripts written without spaces (Han, Kana, Thai: UNSPACED) are left as matched: there a "word" would be
 * the whole sentence.
 */
const WORDED = /[\p{L}\p{Nd}\p{M}\p{Cf}*~`]/u;

/** Linear: spans in order, each character walked at most once (a thousand matches in one long word). */
function toWordEdges(s: string, spans: readonly Span[]): Span[] {
  // By code point: both halves of a pair are read as the character they make.
  const pointAt = (i: number) => {
    const low = s.charCodeAt(i) >= 0xdc00 && s.charCodeAt(i) <= 0xdfff;
    const p = low && i > 0 ? s.codePointAt(i - 1)! : s.codePointAt(i)!;
    return String.fromCodePoint(low && p <= 0xffff ? s.charCodeAt(i) : p);
  };
  const worded = (i: number) => {
    if (i < 0 || i >= s.length) return false;
    const c = pointAt(i);
    return WORDED.test(c) && !UNSPACED.test(c);
  };
  const right = (to: number) => {
    let end = to;
    if (worded(end - 1)) while (worded(end)) end++;
    return end;
  };
  const out: Span[] = [];
  for (const span of mergeSpans(spans, s.length)) {
    const last = out.at(-1);
    if (last && span.start <= last.end) {
      if (span.end > last.end) last.end = right(span.end);
      continue;
    }
    let from = span.start;
    const floor = last?.end ?? 0;
    if (worded(from)) while (from > floor && worded(from - 1)) from--;
    out.push({ start: from, end: right(span.end) });
  }
  return out;
}

/** `text` with each merged run of `spans` replaced by one fixed-width bar. */
export function applySpans(text: string, spans: readonly Span[]): string {
  let out = '';
  let at = 0;
  for (const span of mergeSpans(spans, text.length)) {
    out += text.slice(at, span.start) + REDACTION_BAR;
    at = span.end;
  }
  return out + text.slice(at);
}
