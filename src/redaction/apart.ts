/**
 * Where the skeleton (candidates.ts) cannot tell whether Markdown hides a covered word, and the reader's renderer
 * must be asked (ADR 0045):
 * - every word of a covered phrase is in the text, other than within the phrase written whole: the reader may
 *   show on lines or in cells apart, with what it hides between them (a definition, a fence's info string, a
 *   footnote's definition, a list's marker), words that read as the phrase;
 * - a covered word holds a number the reader may add: a footnote reference's, or an ordered list's item numbered
 *   on from the one before it rather than as written ("100. Room\n1. x" shows "101." before "x").
 * Covered phrases are rare in other text, so this is rarely true where nothing is covered; a numbered list alone
 * is not enough (replies are full of them), only one whose numbering can reach a covered number.
 */
import { fold } from './fold.ts';

export type Apart = (source: string, folded: (string | undefined)[]) => boolean;

const WORD_BREAKS = /[\s\p{P}]+/u;
const NUMBERS = /[0-9]+/g;
/** An ordered list item's marker at a line's start (in a quote or another list too): its number. */
const ORDERED = /(?<=^|[\n\r])[ \t>*+-]*([0-9]{1,9})[.)](?=[ \t\n\r]|$)/g;

export function apart(needles: readonly string[]): Apart {
  const phrases = needles
    .map((n) => ({ whole: n, words: n.split(WORD_BREAKS).filter(Boolean) }))
    .filter((p) => p.words.length > 1);
  const numbers = [...new Set(needles.flatMap((n) => [...n.matchAll(NUMBERS)].map((m) => Number(m[0]))))];
  const wordsApart = (f: string) =>
    phrases.some(({ whole, words }) => {
      const rest = f.includes(whole) ? f.replaceAll(whole, ' ') : f;
      return words.every((w) => rest.includes(w));
    });
  return (source, folded) => {
    if (numbers.length && source.includes('[^') && footnotesShow(source, needles)) return true;
    if (numbers.length && reachable(source, numbers)) return true;
    return folded.some((f) => f !== undefined && wordsApart(f));
  };
}

const REFERENCE = /\[\^([^\]\s]+)\]/g;

/**
 * Whether a needle shows once each footnote reference reads as the number the reader shows for it (1, 2, … in the
 * order first referenced): "Room 10[^1]" shows "Room 101". Each `[^label]` is read as one, a definition or not.
 */
function footnotesShow(source: string, needles: readonly string[]): boolean {
  const order = new Map<string, number>();
  const numbered = source.replace(REFERENCE, (_, label: string) => {
    const key = label.toLowerCase();
    if (!order.has(key)) order.set(key, order.size + 1);
    return String(order.get(key));
  });
  const f = fold(numbered).text;
  return needles.some((n) => f.includes(n));
}

/** Whether an ordered list here, numbered on from any of its written numbers, could show one of `numbers`. */
function reachable(source: string, numbers: number[]): boolean {
  const written = [...source.matchAll(ORDERED)].map((m) => Number(m[1]));
  if (written.length < 2) return false;
  // An item shows its own number or one more than the item before; at most one more per item after the first.
  const most = written.length - 1;
  return numbers.some((n) => written.some((w) => n > w && n <= w + most));
}
