import {
  asciiSkeleton,
  BRACKET,
  candidates,
  HIDDEN_LINES,
  kept,
  LINE_MARKS,
  LOOSE,
  MARK,
  MAY_HIDE,
  READINGS_DIFFER,
  type Reading,
  SYNTAX,
} from './candidates.ts';
import { unconfused, unparenthesised } from './lookalikes.ts';
import { decodeReference, shownText } from './markdown.ts';
import { mergeSpans, REDACTION_BAR, type Span } from './spans.ts';

/**
 * The covering pass: a covered word is covered everywhere. Matching is on a folded form of both sides, so
 * what a reader would recognise as the same word is caught: compatibility forms (full-width letters,
 * ligatures), accents and letters with strokes (ł, ø, æ), case (including ß/SS), apostrophes of every kind;
 * invisible characters (joiners, BOMs, fillers) are ignored, and white space, dashes and underscores all read
 * as one word break. What a reader decodes is decoded first: Markdown's emphasis, code and link brackets and
 * its backslash escapes are invisible, character references (`&#77;`, `&amp;`) and percent-escapes (`%20`,
 * `12+Maple+Street`) read both as what they stand for and as written (prose shows `%7a` as it is), and a link's destination is read both as text and as if it
 * were not there (`[12 Maple](…) Street` shows "12 Maple Street"). Look-alike letters (small capitals, ⒫, 🅟,
 * Cyrillic "р") read as the Latin ones (lookalikes.ts), and letters spelled out one by one with punctuation
 * between ("P-E-L-I-C-A-N", "P.E.L.I.C.A.N") as the word. Where Markdown may split a covered word (candidates.ts),
 * the string is also read as the reader's Markdown renderer shows it (markdown.ts) and the source that showed
 * the word is covered. Matching is by substring, not whole words: covering too much is visible in the preview;
 * too little leaks.
 */

/** A string folded for matching, with the original [start, end) of each folded code unit. */
interface Folded {
  text: string;
  from: number[];
  to: number[];
  /** The skeleton that candidates.ts reads, when asked for. */
  skeleton?: string;
}

// Printable ASCII and the bar itself (which folds to itself): one code unit each, no segmentation needed.
const ASCII = /^[\t\n\r\x20-\x7e\u2588]*$/;
const ASCII_BREAKS = /[ \t\n\r_+-]+/g;
const ASCII_MARKS = /[*`~[\]]/g;
const LINK_DESTINATION = /\]\([^()\s]*\)/g;
const INVISIBLE = /[\p{Mn}\p{Me}\p{Default_Ignorable_Code_Point}]/gu;
const BREAK = /^[\s\p{Pd}\p{Pc}\u2212]+$/u;
const QUOTES = /[\u2018\u2019\u201a\u201b\u2032\u02bc\uff07]/gu;
const STROKES: Record<string, string> = {
  ł: 'l',
  ø: 'o',
  đ: 'd',
  ð: 'd',
  æ: 'ae',
  œ: 'oe',
  ħ: 'h',
  ŧ: 't',
  ŀ: 'l',
};
const STROKED = new RegExp(`[${Object.keys(STROKES).join('')}]`, 'g');
/** What a needle keeps at its core: not the spaces, punctuation and symbols at its edges. */
const EDGES = /^[ \p{P}\p{S}]+|[ \p{P}\p{S}]+$/gu;
const SYMBOL = /\p{S}/u;
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
/** Markdown's marks around words (emphasis, code, strike-through, link text): a reader never sees them. */
const MARKS = new Set(['*', '`', '~', '[', ']']);
/** Spellings a reader decodes: a character reference, a run of percent-escapes, a backslash escape. */
const ENCODED =
  /&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});|(?:%[0-9A-Fa-f]{2})+|\\[!-/:-@[-`{-~]/g;
/** The same, and a link's destination, which the reader shows as nothing between the link text and what follows. */
const ENCODED_OR_LINK = new RegExp(`\\]\\([^()\\s]*\\)|${ENCODED.source}`, 'g');
const DIGIT = /[0-9]/;
/** Printable ASCII other than letters and digits, and the line breaks. */
const ASCII_PUNCTUATION = /^[\n\r\x20-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]$/;
/** Spellings the quick look cannot read (references, escapes): a string with any is always folded. */
const DECODABLE = /[&%\\]/;

/** What an encoded spelling stands for; null when it decodes to nothing a reader would show differently. */
function decoded(token: string): string | null {
  if (token.startsWith('\\')) return token.slice(1);
  if (token.startsWith('%')) {
    try {
      return decodeURIComponent(token);
    } catch {
      return null; // not UTF-8: shown as written
    }
  }
  if (token.startsWith('](')) return '';
  return decodeReference(token);
}

/** How one grapheme reads, for matching: '' when invisible, ' ' when it breaks words. */
function foldGrapheme(g: string): string {
  if (MARKS.has(g)) return '';
  if (g === '+') return ' ';
  const bare = unparenthesised(unconfused(g).normalize('NFKD').replace(INVISIBLE, ''));
  if (!bare) return '';
  if (BREAK.test(bare)) return ' ';
  return bare
    .replace(QUOTES, "'")
    .toUpperCase()
    .toLowerCase()
    .replace(STROKED, (c) => STROKES[c]!)
    .normalize('NFC');
}

/**
 * `s` folded for matching. With `hideLinks`, link destinations read as nothing (the text a reader sees);
 * without, they read as text (the destination itself, which the record carries). Without `decode`, spellings are
 * read as written, not as what they stand for.
 */
function fold(
  s: string,
  hideLinks = false,
  withSkeleton = false,
  decode = true,
  reading: Reading = 'marks',
): Folded {
  const folding = new Folding(s, withSkeleton, reading);
  const encoded = hideLinks ? ENCODED_OR_LINK : ENCODED;
  let last = 0;
  for (const m of decode ? s.matchAll(encoded) : []) {
    const start = m.index;
    const end = start + m[0].length;
    const value = decoded(m[0]);
    folding.plain(s.slice(last, start), last);
    if (value === null) folding.plain(m[0], start);
    else if (value === '') folding.push('', start, end);
    else folding.plain(value, start, [start, end]);
    last = end;
  }
  folding.plain(s.slice(last), last);
  const { text, from, to, skeleton } = folding;
  return skeleton === null ? { text, from, to } : { text, from, to, skeleton };
}

/** One string being folded: the folded text so far, each unit's source range, and the skeleton's state. */
class Folding {
  readonly from: number[] = [];
  readonly to: number[] = [];
  text = '';
  skeleton: string | null;
  private space = false;
  private lineStart = true;
  /** Syntax, a block marker or a fence's info: a mark in the skeleton, not the character. */
  private quiet = false;
  /** Lines not shown (HIDDEN_LINES), [start, end) by turns, in order. */
  private readonly fences: number[];
  private fence = 0;
  /** Right after `]` or `)`: whether a space or punctuation follows is noted (LOOSE). */
  private afterBracket = false;

  constructor(
    private readonly s: string,
    withSkeleton: boolean,
    private readonly reading: Reading = 'marks',
  ) {
    this.skeleton = withSkeleton ? '' : null;
    this.fences =
      withSkeleton && MAY_HIDE.test(s)
        ? [...s.matchAll(HIDDEN_LINES)].flatMap((m) => [m.index, m.index + m[0].length])
        : [];
  }

  /** The skeleton's reading of source character `c` at `at` (written, not decoded), before it is folded. */
  private mark(c: string, at: number) {
    this.quiet = false;
    if (this.skeleton === null) return;
    const fences = this.fences;
    while (this.fence < fences.length && fences[this.fence + 1]! <= at) this.fence += 2;
    if (this.fence < fences.length && fences[this.fence]! <= at) {
      this.skeleton += MARK;
      this.quiet = true;
    } else if (c === '\n' || c === '\r') {
      // A line's end right after a bracket is a break in what is shown, as a space is.
      this.skeleton += this.afterBracket ? LOOSE + MARK : MARK;
      this.lineStart = true;
      this.afterBracket = false;
    } else if (this.lineStart && (LINE_MARKS.has(c) || (this.reading === 'marks' && DIGIT.test(c)))) {
      if (c !== ' ' && c !== '\t') this.skeleton += MARK;
      this.quiet = true;
    } else {
      this.lineStart = false;
      if (SYNTAX.has(c)) {
        this.skeleton += (c === '[' && this.s[at + 1] === '^' ? BRACKET['[^'] : BRACKET[c]) ?? MARK;
        this.afterBracket = c === ']' || c === ')';
        this.quiet = true;
      }
    }
  }

  push(f: string, start: number, end: number) {
    if (this.skeleton !== null && f && !this.quiet) {
      const k = f === ' ' ? '' : kept(f);
      if (this.afterBracket && !k) this.skeleton += LOOSE;
      this.afterBracket = false;
      this.skeleton += k;
    }
    const to = this.to;
    if (!f) {
      // Invisible on its own: joins whatever it sits between.
      if (to.length) to[to.length - 1] = end;
      return;
    }
    if (f === ' ') {
      if (this.space) {
        to[to.length - 1] = end;
        return;
      }
      this.space = true;
    } else this.space = false;
    this.text += f;
    for (let k = 0; k < f.length; k++) {
      this.from.push(start);
      to.push(end);
    }
  }

  /** Plain text from `offset` on; `span` maps every piece to one source range (a decoded spelling's). */
  plain(t: string, offset: number, span?: [number, number]) {
    const at = (i: number, n: number): [number, number] => span ?? [offset + i, offset + i + n];
    if (span) {
      this.quiet = false;
      this.lineStart = false;
    }
    if (ASCII.test(t)) {
      // Printable ASCII and bars (most text, before and after covering): folds as foldGrapheme would.
      for (let i = 0; i < t.length; i++) {
        const c = t[i]!;
        if (!span) this.mark(c, offset + i);
        const breaks =
          c === ' ' || c === '-' || c === '_' || c === '\n' || c === '\t' || c === '\r' || c === '+';
        this.push(breaks ? ' ' : MARKS.has(c) ? '' : c.toLowerCase(), ...at(i, 1));
      }
      return;
    }
    for (const { segment, index } of segmenter.segment(t)) {
      // Markdown reads characters, not graphemes: a mark or a line's end with something invisible or combining
      // after it (`*` and a joiner, `` ` `` and an accent, CRLF) is still that mark, and the rest is read after it.
      const split = segment.length > 1 && ASCII_PUNCTUATION.test(segment[0]!) ? 1 : segment.length;
      for (const [piece, from] of [
        [segment.slice(0, split), index],
        [segment.slice(split), index + split],
      ] as const) {
        if (!piece) continue;
        if (!span) this.mark(piece, offset + from);
        this.push(foldGrapheme(piece), ...at(from, piece.length));
      }
    }
  }
}

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
  const shown = shownText(s);
  // The renderer decodes references and escapes but shows a percent-escape as written: read both ways.
  const folds = [fold(shown.text)];
  if (DECODABLE.test(shown.text)) folds.push(fold(shown.text, false, false, false));
  return folds.map((f) => ({
    text: f.text,
    from: f.from.map((i) => shown.from[i]!),
    to: f.to.map((i) => shown.to[i - 1]!),
  }));
}

/**
 * The needles for words a redaction covered: their core (without the spaces, punctuation and symbols at the
 * edges, so "PELICAN-7731," also finds "pelican-7731."), and the whole selection when it has more than
 * punctuation (so "hunter2$%" leaves no "$%" beside a bar, and "🦩" alone is covered too).
 */
export function needlesOf(words: string): string[] {
  const whole = fold(words).text.trim();
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
  /** `s` with every covered place (and the given spans) replaced by one bar per merged run. */
  apply(s: string, spans?: readonly Span[]): string;
}

/** A cover for these words (the texts under redactions); words that fold to nothing are dropped. */
export function makeCover(words: Iterable<string>): Cover {
  const set = new Set<string>();
  for (const w of words) for (const n of needlesOf(w)) set.add(n);
  const needles = [...set].sort((a, b) => b.length - a.length);
  const maySplit = candidates(needles);
  // Strings this cover found showing nothing: a publish covers each turn's text, then every string of every record
  // again, most of them that same text (half the covering pass's time). Exact strings only, held for one plan.
  const clean = new Set<string>();
  const find = (s: string): Span[] => {
    if (!needles.length || !s || clean.has(s)) return [];
    const hits = search(s);
    if (!hits.length) clean.add(s);
    return hits;
  };
  const search = (s: string): Span[] => {
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
        (READINGS_DIFFER.test(lower) && maySplit(asciiSkeleton(lower, 'kept')));
      if (!parse && !needles.some((n) => quick.includes(n) || shown.includes(n) || joined.includes(n)))
        return [];
    }
    const written = fold(s, false, parse === undefined);
    // A spelling a reader may see as written, not decoded (a percent-escape in prose): "%7a^b" shows "a^b".
    const literal = DECODABLE.test(s) ? fold(s, false, parse === undefined, false) : undefined;
    // As written (a link's destination is text in the record), as a reader shows it without the link's
    // destination, and as the reader's Markdown renderer shows it; each also with spelled-out words joined.
    const views = literal ? [written, literal] : [written];
    if (s.includes('](')) views.push(fold(s, true));
    const split =
      parse ??
      (maySplit(written.skeleton!) ||
        (literal !== undefined && maySplit(literal.skeleton!)) ||
        (READINGS_DIFFER.test(s) && maySplit(fold(s, false, true, true, 'kept').skeleton!)));
    if (split) views.push(...rendered(s));
    for (const v of [...views]) {
      const joined = spelled(v);
      if (joined) views.push(joined);
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
  };
  return {
    needles,
    find,
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
