// @vitest-environment happy-dom
import fc from 'fast-check';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { Markdown } from '../../client/src/components/Markdown.tsx';
import { MARKDOWN_BOUNDS, readsAsMarkdown } from '../../src/markdown/index.ts';
import { makeCover, REDACTION_BAR } from '../../src/redaction/index.ts';

/**
 * The cover judged by what the reader shows: every published text is rendered by the reader's own Markdown
 * component, and the covered word must not be readable in the rendered text, however the text was written.
 * The reading here is the test's own, not the cover's: NFKC, zero-width characters gone, case ignored, the
 * look-alike letters this test writes read back as the letters they stand for, and letters spelled out with
 * the separators this test uses joined.
 */

/** The text content of the reader's rendering of `text`. */
function rendered(text: string): string {
  const div = document.createElement('div');
  div.innerHTML = renderToStaticMarkup(<Markdown text={text} />);
  // A table's cells are seen apart, though its text content joins them.
  for (const cell of div.querySelectorAll('td, th')) cell.append(' ');
  const plain = div.textContent ?? '';
  // A page shows an ordered list's numbers too, which its text content leaves out: both are read.
  const lists = div.querySelectorAll('ol');
  if (!lists.length) return plain;
  for (const ol of lists) {
    const start = Number(ol.getAttribute('start') ?? 1);
    for (const [i, li] of [...ol.children].entries()) li.prepend(`${start + i}. `);
  }
  return `${plain} ¦ ${div.textContent ?? ''}`;
}

const ABC = 'abcdefghijklmnopqrstuvwxyz';
const run = (first: number) => [...ABC].map((_, i) => String.fromCodePoint(first + i));
/** Look-alike alphabets, a → z (null where the alphabet has no such letter). */
const LOOKALIKES: Record<string, (string | null)[]> = {
  smallCapitals: [...'ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꞯʀꜱᴛᴜᴠᴡ_ʏᴢ'].map((c) => (c === '_' ? null : c)),
  parenthesised: run(0x249c),
  circled: run(0x24d0),
  circledCapitals: run(0x24b6),
  negativeCircled: run(0x1f150),
  fullWidth: run(0xff41),
  bold: run(0x1d41a),
  cyrillic: [...ABC].map((c) => ({ a: 'а', c: 'с', e: 'е', o: 'о', p: 'р', x: 'х', y: 'у' })[c] ?? null),
};
const READ_AS = new Map<string, string>();
for (const alphabet of Object.values(LOOKALIKES))
  alphabet.forEach((c, i) => {
    if (c) READ_AS.set(c, ABC[i]!);
  });
const SEPARATORS = ['-', '.', ' ', '·'];
// Three letters or more, one by one, as the cover reads them.
const SPELLED = /(?<![\p{L}\p{N}])\p{L}(?:[-. ·]\p{L}(?![\p{L}\p{N}])){2,}/gu;

/** What a reader makes of shown text. */
function read(shown: string): string {
  const plain = [...shown]
    .map((c) => READ_AS.get(c) ?? c)
    .join('')
    .normalize('NFKC')
    .replace(/[\u200b-\u200d\u2060\ufeff\u00ad]/g, '')
    .replace(/\s+/g, ' ')
    .toLowerCase();
  return `${plain}\n${plain.replace(SPELLED, (m) => m.replace(/[-. ·]/g, ''))}`;
}

/** Ways to write one piece of the word so that the reader shows its letters. */
type Spell = (piece: string) => string;
const letters =
  (f: (c: string) => string): Spell =>
  (piece) =>
    [...piece].map(f).join('');
const spells: Spell[] = [
  (p) => p,
  (p) => p.toUpperCase(),
  ...Object.values(LOOKALIKES).map((alphabet) => letters((c) => alphabet[ABC.indexOf(c.toLowerCase())] ?? c)),
  letters((c) => `&#${c.codePointAt(0)};`),
  letters((c) => `&#x${c.codePointAt(0)!.toString(16)};`),
  (p) => [...p].join('\u200b'),
  (p) => [...p].join('&#8203;'),
  (p) => [...p].join('&zwj;'),
  (p) => [...p].join('&ZeroWidthSpace;'),
  (p) => [...p].join('\u2060'),
];

/** Ways to write two pieces one after the other so that the reader shows them joined. */
type Join = (a: string, b: string) => { text: string; after?: string };
const joins: Join[] = [
  (a, b) => ({ text: a + b }),
  (a, b) => ({ text: `_${a}_*${b}*` }),
  (a, b) => ({ text: `*${a}*_${b}_` }),
  (a, b) => ({ text: `__${a}__**${b}**` }),
  (a, b) => ({ text: `**${a}**__${b}__` }),
  (a, b) => ({ text: `~~${a}~~${b}` }),
  (a, b) => ({ text: `\`${a}\`${b}` }),
  (a, b) => ({ text: `[${a}](https://x.example "t")${b}` }),
  (a, b) => ({ text: `[${a}](https://x.example 'title ${b}')${b}` }),
  (a, b) => ({ text: `[${a}](<a b>)${b}` }),
  (a, b) => ({ text: `[${a}](a(b(c)))${b}` }),
  (a, b) => ({ text: `[${a}](https://x.example)[${b}](https://y.example)` }),
  (a, b) => ({ text: `[${a}](https://x.example)\n${b}` }),
  (a, b) => ({ text: `${a}[^n]${b}`, after: '[^n]: a note' }),
  (a, b) => ({ text: `[${a}][r]${b}`, after: '[r]: https://u.example' }),
  (a, b) => ({ text: `[${a}][]${b}`, after: `[${a}]: https://u.example` }),
  (a, b) => ({ text: `<https://${a}>${b}` }),
  (a, b) => ({ text: `![${a}](x "t")${b}` }),
  (a, b) => ({ text: `![${a}][i]${b}`, after: '[i]: https://i.example/p.png' }),
  (a, b) => ({ text: `${a}&#8203;${b}` }),
  (a, b) => ({ text: `${a}&zwj;${b}` }),
  (a, b) => ({ text: `${a}\u200d${b}` }),
  (a, b) => ({ text: `${a}[^n]${b}`, after: '[^n]: a note' }),
];

/** Text around the word: Markdown of every kind, none of it holding the word. */
const surroundings = fc.constantFrom(
  'A plain sentence.',
  'Some *emphasis* and a [link](https://e.example).',
  '- one\n- two',
  '1. first\n2. second',
  '> a quote',
  '| a | b |\n|---|---|\n| c | d |',
  '```js\nconst x = 1;\n```',
  '# A heading',
  '',
);

/** A covered word, and Markdown that shows it to the reader: split, each piece spelled, pieces joined. */
const disguised = fc
  .record({
    // One word or two (a phrase can be split where its own space is).
    word: fc.oneof(
      fc.stringMatching(/^[a-z]{3,6}$/).map((w) => `q${w}x`),
      fc.stringMatching(/^[a-z]{1,3} [a-z]{1,3}$/).map((w) => `q${w}x`),
    ),
    cuts: fc.uniqueArray(fc.integer({ min: 1, max: 6 }), { maxLength: 3 }),
    spellings: fc.array(fc.nat(spells.length - 1), { minLength: 4, maxLength: 4 }),
    joiners: fc.array(fc.nat(joins.length - 1), { minLength: 3, maxLength: 3 }),
    spelledOut: fc.option(fc.constantFrom(...SEPARATORS), { freq: 4 }),
    before: surroundings,
    after: surroundings,
  })
  .map(({ word, cuts, spellings, joiners, spelledOut, before, after }) => {
    const at = [0, ...cuts.filter((c) => c < word.length).sort((x, y) => x - y), word.length];
    const pieces = at.slice(1).map((end, i) => spells[spellings[i]!]!(word.slice(at[i], end)));
    // Letters spelled out one by one ("P-E-L-I-C-A-N"), some of them emphasised, or pieces joined by Markdown.
    const defs: string[] = [];
    let shown: string;
    if (spelledOut !== null) {
      shown = [...word].map((c, i) => (spellings[i % 4]! % 3 === 0 ? `*${c}*` : c)).join(spelledOut);
    } else {
      shown = pieces[0]!;
      for (const [i, piece] of pieces.slice(1).entries()) {
        const joined = joins[joiners[i]!]!(shown, piece);
        shown = joined.text;
        if (joined.after) defs.push(joined.after);
      }
    }
    const text = [before, `see ${shown} ok`, after, ...defs].filter(Boolean).join('\n\n');
    return { word, text };
  });

/** The disguises an attacker found the reader's renderer showing and the cover leaving alone. */
const REPORTED = [
  '_PELI_*CAN*',
  '__PELI__**CAN**',
  '[PELI](https://x "t")CAN',
  '[PELI](<a b>)CAN',
  '[PELI](a(b))CAN',
  '[PELI][r]CAN\n\n[r]: url',
  '<https://PELI>CAN',
  '![PELI](x "t")CAN',
  'PELI&#8203;CAN',
  'PELI&zwj;CAN',
  'ᴘᴇʟɪᴄᴀɴ',
  '⒫⒠⒧⒤⒞⒜⒩',
  'ⓟⓔⓛⓘⓒⓐⓝ',
  'P-E-L-I-C-A-N',
  'P.E.L.I.C.A.N',
];

/** What generated fuzz of Markdown found shown by the reader's renderer and left uncovered (stops 50 and 51). */
const FOUND: [string, string][] = [
  ['x^2', '_x_[^2](u)'],
  ['E=mc^2', '_E=mc_[^2](https://w.example "t")'],
  ['12 Maple Street', '12 [Maple](https://m.example "map") Street'],
  ['PELICAN-7731', 'PELICAN\n> 7731'],
  ['Room 101', 'Room\n# 101'],
  ['1.5 Maple Street', '1.5 [Maple](u "t") Street'],
  ['2) Maple Street', '# 2) [Maple](u "t") Street'],
  ['42 Maple Street', '[Flat %42](u "t") Maple Street'],
  ['a^b$c', '%7a^b$C'],
  ['Zephyr Station', 'Zephyr\n\n[r]: /u "t"\nStation'],
  ['Zephyr Station', 'Zephyr\n=\nStation'],
  ['PELICAN', '*PELI*\u200dCAN é'],
  ['Room 101', 'Room\r\n# 101 é'],
  ['PELICAN-7731', 'PELICAN\n- [x] 7731'],
  ['Room 101', 'Room\n1. [X] 101 é'],
  // Stop 51's fuzz, judged by this renderer: a full-width digit, an ordered list's marker, a footnote's number,
  // a footnote's definition between the words, hidden lines in a quote, a definition over lines, a table's rows.
  ['Room 101', 'Room 1０1'],
  ['PELICAN-7731', 'PELICAN\n1. 7731'],
  ['12 Maple Street', '12\n1. Maple Street'],
  ['Room 101', 'Room 10[^1]\n\n[^1]: note'],
  ['Zephyr Station', 'Zephyr\n[^1]:n\n\nStation'],
  ['Zephyr Station', 'Zephyr\n>[r]:u\nStation'],
  ['Zephyr Station', '>Zephyr\n>=\nStation'],
  ['Café Zéphyr', 'Café\n\n[r]:\n/\nZéphyr'],
  ['Zephyr Station', '| Zephyr |\n|---|\n| Station |'],
  ['Room 101', '100. Room\n1. x'],
  ['Room 101', 'x[^z] Room 10[^b]\n\n[^b]: n'],
  ['Room 101', '[R](u "t")oom 10[^a]\n\n[^a]: n'],
  ['Room 101', '[R](u "t")oom\n> [r]: /u\n101'],
  ['PELICAN-7731', '1. 7730. PELICAN\n   1. x'],
  ['Room 101', 'Room\n1. 10[^a]\n[^a]:'],
];

describe('the cover, as the reader renders it', () => {
  it('leaves no reported disguise of a covered word readable', () => {
    const cover = makeCover(['PELICAN']);
    for (const text of REPORTED) {
      // Each disguise does show the word as written: the reading is not what hides it.
      expect(read(rendered(text)), text).toContain('pelican');
      const out = cover.apply(text);
      expect(read(rendered(out)), `${text} → ${out}`).not.toContain('pelican');
      expect(out).toContain(REDACTION_BAR);
    }
  });

  it('leaves a covered word unreadable however Markdown, references, look-alikes or spacing disguise it', () => {
    fc.assert(
      fc.property(disguised, ({ word, text }) => {
        const cover = makeCover([word]);
        const out = cover.apply(text);
        const shown = rendered(out);
        expect(read(shown), `${JSON.stringify(text)} → ${JSON.stringify(out)}`).not.toContain(word);
        // The rest is still there to read, and covering again changes nothing.
        expect(shown).toContain('see');
        expect(cover.apply(out)).toBe(out);
      }),
      { numRuns: 300 },
    );
  });

  it('leaves unreadable what a generated fuzz of Markdown found shown and uncovered (stop 50)', () => {
    const loose = (s: string) => s.toLowerCase().replace(/[-_\s]+/g, ' ');
    for (const [words, text] of FOUND) {
      // The reader does show the words (the case is real), and no longer once covered.
      expect(loose(read(rendered(text))), text).toContain(loose(words));
      const out = makeCover([words]).apply(text);
      expect(loose(read(rendered(out))), `${text} → ${out}`).not.toContain(loose(words));
    }
  });

  it('past the parser’s bounds, covers what the reader shows: the text as written', () => {
    // A text the reader shows as written (src/markdown): a long list after it.
    const past = `\n\n${'- x\n'.repeat(MARKDOWN_BOUNDS.blockLines + 1)}`;
    fc.assert(
      fc.property(disguised, ({ word, text }) => {
        const long = text + past;
        expect(readsAsMarkdown(long)).toBe(false);
        const out = makeCover([word]).apply(long);
        const shown = rendered(out);
        expect(shown).toContain('Shown as written');
        expect(read(shown), `${JSON.stringify(text)} → ${JSON.stringify(out)}`).not.toContain(word);
      }),
      { numRuns: 150 },
    );
    const loose = (s: string) => s.toLowerCase().replace(/[-_\s]+/g, ' ');
    for (const [words, text] of FOUND) {
      const out = makeCover([words]).apply(text + past);
      expect(loose(read(rendered(out))), `${text} → ${out}`).not.toContain(loose(words));
    }
    // What only Markdown joins is not joined as written, so the cover does not parse it: a footnote's number that
    // made "Room 101" is shown as the `[^a]` it is written as, and nothing is covered.
    const apart = `Room\n1. 10[^a]\n[^a]:${past}`;
    expect(loose(read(rendered(apart)))).not.toContain('room 101');
    expect(makeCover(['Room 101']).apply(apart)).toBe(apart);
  });
});
