import fc from 'fast-check';
import { expect, it } from 'vitest';
import { coverStrings, MESSAGE_KEEP } from '../../src/publish/covering.ts';
import { makeCover } from '../../src/redaction/index.ts';

// The cover reads a string in its stored order; a browser draws it as its direction characters say. A covered
// word stored backwards behind a right-to-left override is drawn forwards: under a cover those characters go.
const DIRECTION = /[\u202A-\u202E\u2066-\u2069]|&#x0*202e|&#0*8238/i;
const message = (text: string) => ({
  $type: 'click.aligned.chat.message',
  role: 'npc',
  text,
  steps: [{ name: text }],
});

it('a covered word stored backwards behind a right-to-left override is not drawn forwards', () => {
  const cover = makeCover(['PELICAN']);
  for (const text of [
    '\u202ENACILEP',
    '&#x202E;NACILEP',
    '&#8238;NACILEP',
    '&#x0202e;NACILEP',
    // Taking one off joins what is left into another.
    '&#x202\u202EE;NACILEP',
    '&#x20&#x202E;2E;NACILEP',
    '&&#x202E;#x202E;#x202E;NACILEP',
    'PE\u202ENACIL\u202C',
    'x \u2067\u202ENACILEP\u202C\u2069 y',
  ]) {
    const out = coverStrings(message(text), cover, MESSAGE_KEEP);
    expect(out.text).not.toMatch(DIRECTION);
    expect(out.steps[0]!.name).not.toMatch(DIRECTION);
  }
  // The word itself, however its direction is set, is covered as ever.
  expect(coverStrings(message('a \u202DPELICAN\u202C b'), cover, MESSAGE_KEEP).text).not.toMatch(/pelican/i);
});

it('no string under a cover keeps a direction character, whatever it holds', () => {
  const cover = makeCover(['PELICAN']);
  const unit = fc.constantFrom(
    '&',
    '#',
    'x',
    '2',
    '0',
    'E',
    ';',
    'P',
    'E',
    'L',
    'I',
    'C',
    'A',
    'N',
    ' ',
    '\u202A',
    '\u202B',
    '\u202C',
    '\u202D',
    '\u202E',
    '\u2066',
    '\u2067',
    '\u2068',
    '\u2069',
    'ب',
    '*',
  );
  fc.assert(
    fc.property(fc.string({ unit, maxLength: 40 }), (text) => {
      const out = coverStrings(message(text), cover, MESSAGE_KEEP);
      expect(out.text).not.toMatch(DIRECTION);
      // As drawn without them, the word is not there either.
      expect(out.text.toUpperCase()).not.toContain('PELICAN');
    }),
    { numRuns: 300 },
  );
});

it('nothing covered: the text goes as written, direction characters and all', () => {
  const text = 'שלום \u2067עולם\u2069';
  expect(coverStrings(message(text), makeCover([]), MESSAGE_KEEP).text).toBe(text);
});
