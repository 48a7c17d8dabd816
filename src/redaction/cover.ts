import { decodeNamedCharacterReference } from 'decode-named-character-reference';
import { mergeSpans, REDACTION_BAR, type Span } from './spans.ts';

/**
 * The covering pass: a covered word is covered everywhere. Matching is on a folded form of both sides, so
 * what a reader would recognise as the same word is caught: compatibility forms (full-width letters,
 * ligatures), accents and letters with strokes (ł, ø, æ), case (including ß/SS), apostrophes of every kind;
 * invisible characters (joiners, BOMs, fillers) are ignored, and white space, dashes and underscores all read
 * as one word break. What a reader decodes is decoded first: Markdown's emphasis, code and link brackets and
 * its backslash escapes are invisible, character references (`&#77;`, `&amp;`) and percent-escapes (`%20`,
 * `12+Maple+Street`) read as what they stand for, and a link's destination is read both as text and as if it
 * were not there (`[12 Maple](…) Street` shows "12 Maple Street"). Matching is by substring, not whole words:
 * covering too much is visible in the preview; too little leaks.
 */

/** A string folded for matching, with the original [start, end) of each folded code unit. */
interface Folded {
  text: string;
  from: number[];
  to: number[];
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
  const name = token.slice(1, -1);
  if (name[0] !== '#') return decodeNamedCharacterReference(name) || null;
  const code = Number.parseInt(
    name.slice(name[1] === 'x' || name[1] === 'X' ? 2 : 1),
    name[1]?.toLowerCase() === 'x' ? 16 : 10,
  );
  return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
    ? String.fromCodePoint(code)
    : null;
}

/** How one grapheme reads, for matching: '' when invisible, ' ' when it breaks words. */
function foldGrapheme(g: string): string {
  if (MARKS.has(g)) return '';
  if (g === '+') return ' ';
  const bare = g.normalize('NFKD').replace(INVISIBLE, '');
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
 * without, they read as text (the destination itself, which the record carries).
 */
function fold(s: string, hideLinks = false): Folded {
  const from: number[] = [];
  const to: number[] = [];
  let text = '';
  let space = false;
  const push = (f: string, start: number, end: number) => {
    if (!f) {
      // Invisible on its own: joins whatever it sits between.
      if (to.length) to[to.length - 1] = end;
      return;
    }
    if (f === ' ') {
      if (space) {
        to[to.length - 1] = end;
        return;
      }
      space = true;
    } else space = false;
    text += f;
    for (let k = 0; k < f.length; k++) {
      from.push(start);
      to.push(end);
    }
  };
  /** Plain text from `offset` on; `span` maps every piece to one source range (a decoded spelling's). */
  const plain = (t: string, offset: number, span?: [number, number]) => {
    const at = (i: number, n: number): [number, number] => span ?? [offset + i, offset + i + n];
    if (ASCII.test(t)) {
      // Printable ASCII and bars (most text, before and after covering): folds as foldGrapheme would.
      for (let i = 0; i < t.length; i++) {
        const c = t[i]!;
        const breaks =
          c === ' ' || c === '-' || c === '_' || c === '\n' || c === '\t' || c === '\r' || c === '+';
        push(breaks ? ' ' : MARKS.has(c) ? '' : c.toLowerCase(), ...at(i, 1));
      }
      return;
    }
    for (const { segment, index } of segmenter.segment(t))
      push(foldGrapheme(segment), ...at(index, segment.length));
  };
  const encoded = hideLinks ? ENCODED_OR_LINK : ENCODED;
  let last = 0;
  for (const m of s.matchAll(encoded)) {
    const start = m.index;
    const end = start + m[0].length;
    const value = decoded(m[0]);
    plain(s.slice(last, start), last);
    if (value === null) plain(m[0], start);
    else if (value === '') push('', start, end);
    else plain(value, start, [start, end]);
    last = end;
  }
  plain(s.slice(last), last);
  return { text, from, to };
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
  const find = (s: string): Span[] => {
    if (!needles.length || !s) return [];
    // Most strings hold no covered word: a cheap look first (the same fold, without the index map, for the
    // printable ASCII that most text is), and the full fold only where a needle may be.
    if (ASCII.test(s) && !DECODABLE.test(s)) {
      // As the fold reads it: marks gone, breaks one space; and again without link destinations.
      const lower = s.toLowerCase();
      const quick = lower.replace(ASCII_MARKS, '').replace(ASCII_BREAKS, ' ');
      const shown = s.includes('](')
        ? lower.replace(LINK_DESTINATION, '').replace(ASCII_MARKS, '').replace(ASCII_BREAKS, ' ')
        : quick;
      if (!needles.some((n) => quick.includes(n) || shown.includes(n))) return [];
    }
    const hits: Span[] = [];
    // As written (a link's destination is text in the record), and as a reader shows it (without it).
    for (const f of s.includes('](') ? [fold(s), fold(s, true)] : [fold(s)]) {
      for (const needle of needles) {
        for (let at = f.text.indexOf(needle); at >= 0; at = f.text.indexOf(needle, at + 1)) {
          hits.push({ start: f.from[at]!, end: f.to[at + needle.length - 1]! });
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
      return all.length ? applySpans(s, all) : s;
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
