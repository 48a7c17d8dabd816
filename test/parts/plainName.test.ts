import fc from 'fast-check';
import { expect, it } from 'vitest';
import { plainName } from '../../src/parts/index.ts';

// Issue 25, item 7: bidi and other control characters are kept out of names.
const BIDI = ['\u061C', '\u200E', '\u200F', '\u202A', '\u202B', '\u202C', '\u202D', '\u202E'];
const ISOLATES = ['\u2066', '\u2067', '\u2068', '\u2069'];
const INVISIBLE = ['\u200B', '\u2060', '\u2061', '\u2062', '\u2063', '\u2064', '\uFEFF'];
const BREAKS = ['\t', '\n', '\v', '\f', '\r', '\u0085', '\u2028', '\u2029'];
const controls = [...Array(0x20).keys(), ...Array.from({ length: 0x21 }, (_, i) => 0x7f + i)]
  .map((c) => String.fromCharCode(c))
  .filter((c) => !BREAKS.includes(c));
const unwanted = [...BIDI, ...ISOLATES, ...INVISIBLE, ...controls];
const isUnwanted = (c: string) => unwanted.includes(c) || BREAKS.includes(c);

/** Text with the characters names must not keep mixed in. */
const hostile = fc
  .array(fc.oneof(fc.string({ unit: 'grapheme', maxLength: 4 }), fc.constantFrom(...unwanted, ...BREAKS)), {
    maxLength: 30,
  })
  .map((xs) => xs.join(''));

it('no name keeps a control, bidi or zero-width character, and nothing else is lost', () => {
  fc.assert(
    fc.property(hostile, (s) => {
      const out = plainName(s);
      expect([...out].filter(isUnwanted)).toEqual([]);
      expect(out).toBe(out.trim());
      expect(plainName(out)).toBe(out);
      // What is left is the input's other characters, in order (line breaks as spaces).
      const kept = [...s]
        .map((c) => (BREAKS.includes(c) ? ' ' : c))
        .filter((c) => !unwanted.includes(c))
        .join('')
        .trim();
      expect(out).toBe(kept);
    }),
    { numRuns: 2000 },
  );
});

it('an ordinary name is left as it is, emoji sequences and joiners included', () => {
  fc.assert(
    fc.property(
      fc.string({ unit: 'grapheme' }).filter((s) => ![...s].some(isUnwanted)),
      (s) => {
        expect(plainName(s)).toBe(s.trim());
      },
    ),
    { numRuns: 1000 },
  );
  expect(plainName('👨‍👩‍👧 Family')).toBe('👨‍👩‍👧 Family');
  expect(plainName('ev\u202Egnp.html')).toBe('evgnp.html');
  expect(plainName('\u2067Ada\u2069\n Lovelace\u0000')).toBe('Ada  Lovelace');
});
