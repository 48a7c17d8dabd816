/**
 * Whether Markdown could be hiding a covered word in a string: parsing Markdown costs far more than folding,
 * and most published strings hold no covered word, so a string is parsed only when this says it may.
 *
 * It reads a *skeleton* of the folded string: letters, digits and symbols as folded; spaces and punctuation
 * dropped (a needle's own spaces and punctuation do not matter here); and NUL for each character that can be
 * Markdown syntax (emphasis, brackets, parentheses, angle brackets, code, strike-through, table pipes,
 * backslashes, line breaks, and the list, quote and heading markers at a line's start). What a reader does not
 * show (marks, destinations, titles, labels, definitions, markers) always starts and ends with such a character.
 * So when Markdown splits a covered word, the first piece shown ends right before a NUL and the last starts
 * right after one: a string is a candidate only when, for one needle, the skeleton holds a token ending with
 * one of its beginnings and a token starting with its matching end. A needle written whole is found by the
 * fold without parsing.
 */

/** Characters that can be Markdown syntax wherever they are. */
export const SYNTAX = new Set(['*', '_', '[', ']', '(', ')', '<', '>', '!', '`', '~', '|', '\\', '\n', '\r']);
/** Characters that, at a line's start, can be a block's marker (with spaces between). */
export const LINE_MARKS = new Set([' ', '\t', '>', '*', '+', '-', '#', '.', ')', ...'0123456789']);
const NOT_KEPT = /[\s\p{P}]/gu;

/** A needle as the skeleton holds it. */
export const skeletonOf = (needle: string): string => needle.replace(NOT_KEPT, '');
/** A folded piece as the skeleton holds it. */
export const kept = (folded: string): string =>
  folded.length === 1 && /[a-z0-9]/.test(folded) ? folded : folded.replace(NOT_KEPT, '');

/** The skeleton of printable ASCII text, by the same rules, without folding (ASCII folds to lower case). */
export function asciiSkeleton(lower: string): string {
  return lower
    .replace(/(?<=^|[\n\r])[ \t>*+#\-.)0-9]+/g, '\0')
    .replace(/[*_[\]()<>!`~|\\\n\r]/g, '\0')
    .replace(/[^a-z0-9$=^\0\u2588]/g, '');
}

interface Node {
  next: Map<string, Node>;
  ids: number[];
}
const node = (): Node => ({ next: new Map(), ids: [] });
const insert = (root: Node, key: string, id: number) => {
  let at = root;
  for (const c of key) {
    const n = at.next.get(c) ?? node();
    at.next.set(c, n);
    at = n;
  }
  at.ids.push(id);
};

/** Whether this skeleton may show a needle split by Markdown. */
export type Candidates = (skeleton: string) => boolean;

/** The test for these needles (folded); needles of one kept character cannot be split. */
export function candidates(needles: readonly string[]): Candidates {
  const heads = node(); // each needle's proper beginnings, reversed: read backwards from a NUL
  const tails = node(); // each needle's proper ends: read forwards from a NUL
  let any = false;
  let longest = 0;
  needles.forEach((needle, id) => {
    const cps = [...skeletonOf(needle)];
    longest = Math.max(longest, needle.length);
    for (let k = 1; k < cps.length; k++) {
      insert(heads, cps.slice(0, k).reverse().join(''), id);
      insert(tails, cps.slice(k).join(''), id);
      any = true;
    }
  });
  return (skeleton) => {
    if (!any) return false;
    const began = new Set<number>();
    const ended = new Set<number>();
    for (let p = skeleton.indexOf('\0'); p >= 0; p = skeleton.indexOf('\0', p + 1)) {
      let at: Node | undefined = heads;
      // Code points, read backwards: a surrogate pair is stepped over whole.
      for (let i = p; at && i > 0; ) {
        const low = skeleton.charCodeAt(i - 1);
        const width = low >= 0xdc00 && low <= 0xdfff && i > 1 ? 2 : 1;
        at = at.next.get(skeleton.slice(i - width, i));
        i -= width;
        for (const id of at?.ids ?? []) began.add(id);
      }
      at = tails;
      for (const c of skeleton.slice(p + 1, p + 1 + longest)) {
        at = at.next.get(c);
        if (!at) break;
        for (const id of at.ids) ended.add(id);
      }
    }
    for (const id of began) if (ended.has(id)) return true;
    return false;
  };
}
