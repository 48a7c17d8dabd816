/**
 * Where the skeleton (candidates.ts) cannot tell whether Markdown hides a covered word, and the reader's renderer
 * must be asked (ADR 0045):
 * - every word of a covered phrase is in the text's letters and digits, other than within the phrase written
 *   whole: the reader may show on lines or in cells apart, with what it hides between them (a definition, a
 *   fence's info string, a footnote's definition, a list's marker), words that read as the phrase, each of them
 *   perhaps split by Markdown of its own (`[R]( )oom`);
 * - a covered word holds a number the reader may add: a footnote's (any text with a footnote definition), or an
 *   ordered list's item numbered on from the one before it rather than as written ("100. Room\n1. x" shows "101."
 *   before "x").
 * Covered phrases are rare in other text, so this is rarely true where nothing is covered. A numbered list alone is
 * not enough (replies are full of them), only one whose numbering can reach a covered number; footnotes are rare.
 */
export type Apart = (source: string, folded: (string | undefined)[]) => boolean;

const WORD_BREAKS = /[\s\p{P}]+/u;
const NOT_WORD = /[^\p{L}\p{N}]+/gu;
const NUMBERS = /[0-9]+/g;
/** A footnote's definition, in a container or not: where there is none, no reference is one. */
const FOOTNOTE_DEFINITION = /\[\^[^\]\n\r]*\]:/;
/** What may open a line before its text: quote and list markers, an ordered list's numbers among them. */
const LINE_MARKERS = /(?<=^|[\n\r])[ \t>*+\-.)0-9]+/g;
const ORDERED_NUMBER = /([0-9]{1,9})[.)](?=[ \t]|$)/g;

export function apart(needles: readonly string[]): Apart {
  const phrases = needles
    .map((n) => ({ whole: n, words: n.split(WORD_BREAKS).filter(Boolean) }))
    .filter((p) => p.words.length > 1)
    .map((p) => ({ ...p, words: p.words.map((w) => w.replace(NOT_WORD, '')).filter(Boolean) }));
  const numbers = [...new Set(needles.flatMap((n) => [...n.matchAll(NUMBERS)].map((m) => Number(m[0]))))];
  const wordsApart = (f: string) =>
    phrases.some(({ whole, words }) => {
      // A whole occurrence is the fold's to find; only the letters and digits of the rest are read.
      const rest = (f.includes(whole) ? f.replaceAll(whole, ' ') : f).replace(NOT_WORD, '');
      return words.every((w) => rest.includes(w));
    });
  return (source, folded) => {
    if (numbers.length && FOOTNOTE_DEFINITION.test(source)) return true;
    if (numbers.length && reachable(source, numbers)) return true;
    return folded.some((f) => f !== undefined && wordsApart(f));
  };
}

/** Whether an ordered list here, numbered on from any of its written numbers, could show one of `numbers`. */
function reachable(source: string, numbers: number[]): boolean {
  // Every number a line opens with: a list may open another on its item's line ("1. 100. Room").
  const written = [...source.matchAll(LINE_MARKERS)].flatMap((line) =>
    [...line[0].matchAll(ORDERED_NUMBER)].map((m) => Number(m[1])),
  );
  if (written.length < 2) return false;
  // An item shows its own number or one more than the item before; at most one more per item after the first.
  const most = written.length - 1;
  return numbers.some((n) => written.some((w) => n > w && n <= w + most));
}
