import { REDACTION_BAR } from './spans.ts';

/**
 * The characters that set the direction text is drawn in (embeddings, overrides, isolates: U+202A–202E and
 * U+2066–2069), and the numeric references a Markdown reader turns into them ("&#x202E;", "&#8238;"). The cover
 * reads text in its stored order, skipping them; a browser draws it as they say: "\u202ENACILEP" is "nacilep" to
 * the cover and PELICAN on the screen.
 */
const DIRECTION = /[\u202A-\u202E\u2066-\u2069]|&#(?:x0*(?:202[a-e]|206[6-9])|0*(?:823[4-8]|829[4-7]));?/gi;
/** Each pass can join what is left into a new reference ("&#x202\u202EE;"): passes until none is left, this many at most. */
const PASSES = 8;

/**
 * `s` without the characters (and references to them) that would draw it in another order than the cover read
 * it; taken off before covering, until none is left, so what the cover reads is what goes out. A string that
 * still holds one after `PASSES` passes (references nested to make one another) goes out as one bar.
 */
export function withoutDirection(s: string): string {
  let out = s;
  for (let pass = 0; pass < PASSES; pass++) {
    const next = out.replace(DIRECTION, '');
    if (next === out) return out;
    out = next;
  }
  return DIRECTION.test(out) ? REDACTION_BAR : out;
}
