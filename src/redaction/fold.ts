import {
  BRACKET,
  HIDDEN_LINES,
  kept,
  LINE_MARKS,
  LOOSE,
  MARK,
  MAY_HIDE,
  type Reading,
  SYNTAX,
} from './candidates.ts';
import { unconfused, unparenthesised } from './lookalikes.ts';
import { decodeReference } from './markdown.ts';

// The fold the covering pass matches on (cover.ts): each string as a reader would recognise its words, mapped
// back to the source, and the skeleton that candidates.ts reads.

/** A string folded for matching, with the original [start, end) of each folded code unit. */
export interface Folded {
  text: string;
  from: number[];
  to: number[];
  /** The skeleton that candidates.ts reads, when asked for. */
  skeleton?: string;
}

// Printable ASCII and the bar itself (which folds to itself): one code unit each, no segmentation needed.
export const ASCII = /^[\t\n\r\x20-\x7e\u2588]*$/;
/**
 * What a reader does not see between letters: combining marks, default-ignorable characters, noncharacters, and
 * control characters other than tab, line feed, form feed and carriage return, which HTML shows as white space (a
 * browser shows "Zeph\u0001yr" and "Zeph\u000byr" as "Zephyr", and the Atom feed drops what XML cannot hold).
 */
const INVISIBLE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is read as invisible
  /[\p{Mn}\p{Me}\p{Default_Ignorable_Code_Point}\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\p{Noncharacter_Code_Point}]/gu;
const BREAK = /^[\s\p{Pd}\p{Pc}\u2212]+$/u;
const PLAIN = /^[A-Za-z0-9]+$/;
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
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
/** Markdown's marks around words (emphasis, code, strike-through, link text): a reader never sees them. */
const MARKS = new Set(['*', '`', '~', '[', ']']);
/** Spellings a reader decodes: a character reference, a run of percent-escapes, a backslash escape. */
const ENCODED =
  /&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});|(?:%[0-9A-Fa-f]{2})+|\\[!-/:-@[-`{-~]/g;
/**
 * A link's destination and title, which the reader shows as nothing between the link text and what follows:
 * `](u)`, `](<a b>)`, `](u "t")`. A title past 200 characters is read as text (the look stays linear).
 */
export const LINK_DESTINATION =
  /\]\([ \t]*(?:(?:<[^<>\n\r]*>|[^()\s]+)(?:[ \t\n\r]+(?:"[^"]{0,200}"|'[^']{0,200}'|\([^()]{0,200}\)))?[ \t]*)?\)/g;
/** The same as ENCODED, and a link's destination. */
const ENCODED_OR_LINK = new RegExp(`${LINK_DESTINATION.source}|${ENCODED.source}`, 'g');
const DIGIT = /[0-9]/;
/** A decimal digit of any script: Unicode encodes each script's ten in one run, 0 to 9, in order. */
const DECIMAL = /^\p{Nd}$/u;
const OTHER_DIGITS = /(?![0-9])\p{Nd}/u;

/**
 * `s` has a decimal digit that is not 0–9 even as NFKD reads it (a full-width "３" is 3 already): it is also read
 * for its digits (`fold`'s `digits`).
 */
export const hasOtherDigits = (s: string): boolean =>
  OTHER_DIGITS.test(s) && OTHER_DIGITS.test(s.normalize('NFKD'));
/** Printable ASCII other than letters and digits, and the line breaks. */
const ASCII_PUNCTUATION = /^[\n\r\x20-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]$/;
/** Spellings the quick look cannot read (references, escapes): a string with any is always folded. */
export const DECODABLE = /[&%\\]/;

/** `s` with every spelling a reader decodes decoded: what the gates on scripts and digits look at. */
export const decodedText = (s: string): string =>
  DECODABLE.test(s) ? s.replace(ENCODED, (m) => decoded(m) ?? m) : s;

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
function foldGrapheme(g: string, digits: boolean): string {
  if (MARKS.has(g)) return '';
  if (g === '+') return ' ';
  // What NFKD reads as plain letters or digits is those: the look-alike map takes a full-width "０" or "𝟎" for
  // "O", "ℐ" for "J".
  const decomposed = g.normalize('NFKD').replace(INVISIBLE, '');
  // Read for its digits, a digit NFKD leaves as it is (Arabic-Indic "٣", Devanagari "३") is the digit it is:
  // "۰۶۱۲" is 0612. Otherwise it is read as the letter it looks like, if any ("८" as "c").
  if (digits && DECIMAL.test(decomposed)) return String(digitValue(decomposed.codePointAt(0)!));
  const bare = PLAIN.test(decomposed)
    ? decomposed
    : unparenthesised(unconfused(g).normalize('NFKD').replace(INVISIBLE, ''));
  if (!bare) return '';
  if (BREAK.test(bare)) return ' ';
  return bare
    .replace(QUOTES, "'")
    .toUpperCase()
    .toLowerCase()
    .replace(STROKED, (c) => STROKES[c]!)
    .normalize('NFC');
}

/** A decimal digit's value: its place in its script's run of ten (runs may sit side by side, each from 0). */
function digitValue(cp: number): number {
  let first = cp;
  while (DECIMAL.test(String.fromCodePoint(first - 1))) first--;
  return (cp - first) % 10;
}

/** Scripts written without spaces between words: a space or line break inside a name there is often not a break. */
export const UNSPACED =
  /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Bopomofo}\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}]/u;

/**
 * `f` (a fold of `s`) with each break between two characters of such a script read as nothing: "山田 太郎" and
 * "李\n雷" as the names "山田太郎" and "李雷" are. The script is the source's: the look-alike map may have read
 * "丁" as "t". Null when it has no such break.
 */
export function unspaced(f: Folded, s: string): Folded | null {
  // The source the unit came from: a character, or a spelling decoded ("&#23665;" is 山).
  const unspacedAt = (i: number) => {
    const at = f.from[i];
    if (at === undefined) return false;
    const c = String.fromCodePoint(s.codePointAt(at) ?? 32);
    if (!DECODABLE.test(c)) return UNSPACED.test(c);
    const source = s.slice(at, f.to[i]);
    return UNSPACED.test(decoded(source) ?? source);
  };
  let out: Folded | null = null;
  const t = f.text;
  for (let i = 0; i < t.length; i++) {
    const gap = t[i] === ' ' && i > 0 && unspacedAt(i - 1) && unspacedAt(i + 1);
    if (gap && !out) out = { text: t.slice(0, i), from: f.from.slice(0, i), to: f.to.slice(0, i) };
    else if (out && !gap) {
      out.text += t[i];
      out.from.push(f.from[i]!);
      out.to.push(f.to[i]!);
    }
  }
  return out;
}

/**
 * `s` folded for matching. With `hideLinks`, link destinations read as nothing (the text a reader sees);
 * without, they read as text (the destination itself, which the record carries). Without `decode`, spellings are
 * read as written, not as what they stand for. `withSkeleton` builds the skeleton candidates.ts reads, in `reading`.
 */
export function fold(
  s: string,
  {
    hideLinks = false,
    withSkeleton = false,
    decode = true,
    reading = 'marks',
    digits = false,
  }: {
    hideLinks?: boolean;
    withSkeleton?: boolean;
    decode?: boolean;
    reading?: Reading;
    /** Digits of every script read as the digits they are (`hasOtherDigits`), not as the letters they look like. */
    digits?: boolean;
  } = {},
): Folded {
  const folding = new Folding(s, withSkeleton, reading, digits);
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
    private readonly digits = false,
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
      // What follows a task's checkbox on its line is the item's text, not another marker.
      this.lineStart = false;
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
    const read = (piece: string, from: number) => {
      if (!span) this.mark(piece, offset + from);
      this.push(foldGrapheme(piece, this.digits), ...at(from, piece.length));
    };
    for (const { segment, index } of segmenter.segment(t)) {
      // Markdown reads characters, not graphemes: a mark or a line's end with something invisible or combining
      // after it (`*` and a joiner, `` ` `` and an accent, CRLF) is still that mark, and the rest is read after it.
      if (segment.length > 1 && ASCII_PUNCTUATION.test(segment[0]!)) {
        read(segment[0]!, index);
        read(segment.slice(1), index + 1);
      } else read(segment, index);
    }
  }
}
