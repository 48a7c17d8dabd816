/** Small pure string helpers for records: lengths as the lexicon counts them, clipping, one-line text. */
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Grapheme count, skipped when the UTF-16 length already proves the string is within `limit`. */
export const graphemes = (s: string, limit = 0) =>
  s.length <= limit ? s.length : [...segmenter.segment(s)].length;

/** At most `max` graphemes; a clipped string ends with an ellipsis. */
export function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  let out = '';
  let n = 0;
  for (const { segment } of segmenter.segment(s)) {
    if (n++ === max - 1) return `${out}…`;
    out += segment;
  }
  return out;
}

export const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();
