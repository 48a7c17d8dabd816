/**
 * Whether Markdown could be hiding a covered word in a string: parsing Markdown costs far more than folding,
 * and most published strings hold no covered word, so a string is parsed only when this says it may.
 *
 * It reads a *skeleton* of the folded string: letters, digits and symbols as folded; spaces and punctuation
 * dropped (a needle's own spaces and punctuation do not matter here); a MARK for each character that can be
 * Markdown syntax (emphasis, parentheses, angle brackets, code, strike-through, table pipes, backslashes, line
 * breaks, the list, quote and heading markers at a line's start, a code fence's info string), and a BRACKET
 * for `[^`, `]` and `)`. What a reader does not show is made of marks, except where it holds words: a link's
 * destination and title `](…)` and a reference's label `][…]`, which open after `]` and close with `)` or `]`.
 * So when Markdown shows a covered word, either its letters are next to each other once the marks and brackets
 * are gone (with a mark between: without, the fold finds it), or, with the marks gone, a `]` follows one of its
 * beginnings and a bracket precedes its matching end (an end that follows the needle's own space or
 * punctuation, when a space, punctuation or line end follows that bracket). Anything else is not parsed.
 */

// Private-use characters: a text that holds them only reads as having more syntax (parsed more often).
export const MARK = '\ue000';
/**
 * `[^` (a footnote's label: the reader shows a number in its place, but an image's alt shows nothing), `]` (before
 * a destination or a label, and after a label) and `)` (after a destination).
 */
export const BRACKET: Record<string, string> = { '[^': '\ue001', ']': '\ue002', ')': '\ue003' };
const FOOTNOTE = '\ue001';
/** A bracket or LOOSE, which the walks from a bracket read past. */
const BRACKETS = /^[\ue001-\ue004]$/;
/** After a closing bracket, where what follows is a space or punctuation: the word may go on only after its own. */
export const LOOSE = '\ue004';
const AFTER_SHOWN = new Set(['\ue001', '\ue002']);
const BEFORE_SHOWN = new Set(['\ue002', '\ue003']);
/** Characters that can be Markdown syntax wherever they are. */
export const SYNTAX = new Set(['*', '_', '[', ']', '(', ')', '<', '>', '!', '`', '~', '|', '\\', '\n', '\r']);
/** Characters that, at a line's start, can be a block's marker (with spaces between). */
export const LINE_MARKS = new Set([' ', '\t', '>', '*', '+', '-', '#', '.', ')']);
/**
 * Where a line starts with a digit, the skeleton is read both ways: `marks`, with the digits where a list's number
 * may be as marks, and `kept`, with them as characters. A list's number is not always one ("1.5 [Maple](u "t")
 * Street", a heading's "2)"), and as marks only, "12 [Maple](u "t") Street" or "PELICAN\n> 7731" lost the digits a
 * reader sees.
 */
export type Reading = 'marks' | 'kept';
/** Where the two readings may differ: a digit where a line's marker may be. */
export const READINGS_DIFFER = /(?:^|[\n\r])[ \t>*+#\-.)]*[0-9]/;
/** A code fence's opening line: its info string is not shown. */
export const FENCE = /(?<=^|[\n\r])[ \t]*(?:`{3,}[^`\n\r]*|~{3,}[^\n\r]*)/g;
/**
 * Lines a reader may not be shown at all: a code fence's opening line, a link reference's definition
 * (`[r]: /u "t"`, not a footnote's) and a setext heading's `===` underline. Their letters would otherwise keep apart
 * the words on the lines either side ("Zephyr\n\n[r]: /u\nStation" shows "Zephyr" and "Station"). And a task
 * list item's marker and checkbox (`- [x] `), which the reader shows as a box: its `x` kept "PELICAN\n- [x] 7731"
 * apart.
 */
export const HIDDEN_LINES = new RegExp(
  [
    FENCE.source,
    // A definition only when it is one (a destination, then at most a title): otherwise the line is shown.
    String.raw`(?<=^|[\n\r])[ \t]{0,3}\[(?!\^)[^\]\n\r]+\]:[ \t]*(?:<[^<>\n\r]*>|[^\s<]\S*)(?:[ \t]+(?:"[^"\n\r]*"|'[^'\n\r]*'|\([^()\n\r]*\)))?[ \t]*(?=[\n\r]|$)`,
    String.raw`(?<=^|[\n\r])[ \t]*=+[ \t]*(?=[\n\r]|$)`,
    // Over-reading is safe here (more is parsed): any list marker, however nested, then `[ ]`, `[x]` or `[X]`.
    String.raw`(?<=^|[\n\r])[ \t>*+\-.)0-9]*[*+\-.)][ \t]+\[[ xX]\](?=[ \t\n\r]|$)`,
  ].join('|'),
  'g',
);
/** What each of HIDDEN_LINES needs: most text has none, and the look behind is tried at every position. */
export const MAY_HIDE = /```|~~~|\]:|=|\[[ xX]\]/;
const NEVER = /(?!)/g;
const NOT_KEPT = /[\s\p{P}]/gu;

/** A needle as the skeleton holds it. */
export const skeletonOf = (needle: string): string => needle.replace(NOT_KEPT, '');
/** A folded piece as the skeleton holds it. */
export const kept = (folded: string): string =>
  folded.length === 1 && /[a-z0-9]/.test(folded) ? folded : folded.replace(NOT_KEPT, '');

const LINE_START_DIGITS = /(?<=^|[\n\r])[ \t>*+#\-.)0-9]+/g;
const LINE_START = /(?<=^|[\n\r])[ \t>*+#\-.)]+/g;
/** The skeleton of printable ASCII text, by the same rules, without folding (ASCII folds to lower case). */
export function asciiSkeleton(lower: string, reading: Reading = 'marks'): string {
  return (
    lower
      .replace(MAY_HIDE.test(lower) ? HIDDEN_LINES : NEVER, MARK)
      .replace(reading === 'marks' ? LINE_START_DIGITS : LINE_START, MARK)
      .replace(/[\])](?=[ \t\n\r+"#%&',\-./:;?@{}])/g, `$&${LOOSE}`)
      // A footnote's `[^` is its bracket, and the `^` stays a character, as the fold keeps it.
      .replace(/\[(?=\^)|[\])]/g, (c) => (c === '[' ? FOOTNOTE : BRACKET[c]!))
      .replace(/[*_[(<>!`~|\\\n\r]/g, MARK)
      .replace(/[^a-z0-9$=^\ue000-\ue004\u2588]/g, '')
  );
}

/**
 * How many of a needle's characters either side of a split are matched exactly. A piece longer than this is known
 * by its REACH characters next to the split: a text that has them is parsed (the parse then decides), which reads
 * more, never less. Exact pieces of every length cost a needle's length squared to build, and one covered
 * paragraph of 5,000 characters took 5.7 s of the event loop to make its cover.
 */
const REACH = 32;

/** Pieces of needles by their characters next to a split, each with the needles (ids) it is a piece of. */
type Pieces = Map<string, number[]>;
const add = (pieces: Pieces, key: string, id: number) => {
  const ids = pieces.get(key);
  if (!ids) pieces.set(key, [id]);
  else if (ids[ids.length - 1] !== id) ids.push(id);
};

/** Whether this skeleton may show a needle split by Markdown. */
export type Candidates = (skeleton: string) => boolean;

const count = (s: string, n: string) => {
  let k = 0;
  for (let at = s.indexOf(n); at >= 0; at = s.indexOf(n, at + 1)) k++;
  return k;
};

/**
 * Each needle's proper beginnings (read backwards from a bracket) and proper ends (read forwards from one): ends
 * after a space or punctuation in the needle (loose), and after a letter (tight). Pieces past REACH by the REACH
 * characters next to the split.
 */
function split(needles: readonly string[]) {
  const heads: Pieces = new Map();
  const loose: Pieces = new Map();
  const tight: Pieces = new Map();
  // Every run of up to GRAM characters in a needle, for `near` to stop where no piece can be.
  const grams = new Set<string>();
  let any = false;
  needles.forEach((needle, id) => {
    // The needle's kept characters (code points), each with whether a space or punctuation comes right before it.
    const cps: string[] = [];
    const spaced: boolean[] = [];
    let after = false;
    for (const c of needle) {
      if (skeletonOf(c)) {
        cps.push(c);
        spaced.push(after);
      }
      after = !skeletonOf(c);
    }
    for (let k = 0; k < cps.length; k++)
      for (let n = 1; n <= GRAM && k + n <= cps.length; n++) grams.add(cps.slice(k, k + n).join(''));
    for (let k = 1; k < cps.length; k++) {
      add(heads, cps.slice(Math.max(0, k - REACH), k).join(''), id);
      add(spaced[k] ? loose : tight, cps.slice(k, k + REACH).join(''), id);
      any = true;
    }
  });
  return { heads, loose, tight, grams, any };
}

/** How many characters at the growing end of a piece are checked against GRAMS before the piece is looked up. */
const GRAM = 4;

/**
 * Up to REACH characters (code points) next to `p`, nearest first, reading past brackets; fewer where the last GRAM
 * read are in no needle (no longer piece can be in one either): most text near a bracket stops within a character
 * or two, as a trie's walk would.
 */
function near(marked: string, p: number, backwards: boolean, grams: Set<string>): string[] {
  const out: string[] = [];
  for (let i = p; out.length < REACH && (backwards ? i > 0 : i < marked.length); ) {
    let c: string;
    if (backwards) {
      const low = marked.charCodeAt(i - 1);
      const width = low >= 0xdc00 && low <= 0xdfff && i > 1 ? 2 : 1;
      c = marked.slice(i - width, i);
      i -= width;
    } else {
      c = String.fromCodePoint(marked.codePointAt(i)!);
      i += c.length;
    }
    // A footnote's label between pieces shows nothing in an image's alt, and a `)` or `]` may be shown as
    // written ("# 2) [Maple](…) Street"): read past every bracket.
    if (BRACKETS.test(c)) continue;
    out.push(c);
    const edge = out.slice(-GRAM);
    if (!grams.has((backwards ? edge.reverse() : edge).join(''))) return out.slice(0, -1);
  }
  return out;
}

export function candidates(needles: readonly string[]): Candidates {
  const { heads, loose, tight, grams, any } = split(needles);
  const cores = [...new Set(needles.map(skeletonOf))].filter(Boolean);
  return (skeleton) => {
    // Letters next to each other once marks and brackets are gone, with one of them between: an occurrence
    // with none between is the fold's to find.
    const bare = skeleton.replace(/[\ue000-\ue004]/g, '');
    const clean = skeleton.replaceAll(LOOSE, '');
    if (cores.some((n) => count(bare, n) > count(clean, n))) return true;
    if (!any) return false;
    const marked = skeleton.replaceAll(MARK, '');
    const began = new Set<number>();
    const ended = new Set<number>();
    const look = (pieces: Pieces, key: string, into: Set<number>) => {
      for (const id of pieces.get(key) ?? []) into.add(id);
    };
    for (const { index: p, 0: c } of marked.matchAll(/[\ue001-\ue003]/g)) {
      if (AFTER_SHOWN.has(c)) {
        let key = '';
        for (const prev of near(marked, p, true, grams)) {
          key = prev + key;
          look(heads, key, began);
        }
      }
      if (!BEFORE_SHOWN.has(c)) continue;
      const after = marked[p + 1];
      // A space or punctuation right after: the word goes on only after its own. A letter right after: the
      // word's own space may have come before the hidden part, so either kind of end.
      const ends = after === LOOSE ? [loose] : [loose, tight];
      let key = '';
      for (const next of near(marked, after === LOOSE ? p + 2 : p + 1, false, grams)) {
        key += next;
        for (const pieces of ends) look(pieces, key, ended);
      }
    }
    for (const id of began) if (ended.has(id)) return true;
    return false;
  };
}
