import { confusablesMap } from 'confusables';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applySpans,
  coverOf,
  extraPlaces,
  makeCover,
  mergeSpans,
  REDACTION_BAR,
  type Span,
} from '../../src/redaction/index.ts';
import { shownText } from '../../src/redaction/markdown.ts';

const SMALL_CAPITALS = 'ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꞯʀꜱᴛᴜᴠᴡxʏᴢ';
/** Each a–z letter of `w` as `to` makes it. */
const letters = (w: string, to: (i: number) => string) =>
  [...w].map((c) => (/[a-z]/.test(c) ? to(c.charCodeAt(0) - 97) : c)).join('');

/**
 * Ways a reader still recognises a word: case, accents decomposed, full-width, invisible joiners, look-alike
 * letters (small capitals, parenthesised), letters spelled out one by one.
 */
const variants = (w: string): string[] => [
  w,
  w.toUpperCase(),
  w[0]!.toUpperCase() + w.slice(1),
  w.normalize('NFD'),
  [...w].map((c) => (/[a-z]/i.test(c) ? String.fromCodePoint(c.codePointAt(0)! + 0xfee0) : c)).join(''),
  [...w].join('\u200b'),
  [...w].join('\ufeff'),
  [...w].join('\u3164'),
  letters(w, (i) => SMALL_CAPITALS[i]!),
  letters(w, (i) => String.fromCodePoint(0x249c + i)),
  [...w].join('-'),
  [...w.toUpperCase()].join('.'),
];

/** Text as a reader shows it: references and escapes decoded, Markdown's marks and link destinations gone. */
const decodeForReader = (s: string): string => {
  let t = s.replace(/\]\([^()\s]*\)/g, '').replace(/[*`~[\]]/g, '');
  t = t.replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCodePoint(Number.parseInt(h, 16)));
  t = t.replace(/&#([0-9]+);/g, (_, d) => String.fromCodePoint(Number(d)));
  t = t
    .replace(/&nbsp;/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/\\(.)/g, '$1')
    .replace(/\+/g, ' ');
  return t.replace(/(%[0-9A-F]{2})+/gi, (m) => decodeURIComponent(m)).replace(/\u00a0/g, ' ');
};

const word = fc.stringMatching(/^[a-z]{3,7}$/).map((w) => `q${w}x`);
const accented = fc.constantFrom('café', 'señora', 'übermut', 'naïve', 'straße');

const loose = (t: string) =>
  t
    .normalize('NFKD')
    .replace(/[\p{M}\p{Default_Ignorable_Code_Point}]/gu, '')
    .toLowerCase()
    .replace(/[\s_-]+/g, ' ');
/** As the reader shows it (the reader's own parser), with and without the numbers it adds. */
const reads = (t: string) => {
  const shown = shownText(t);
  return [shown.text, shown.numbered?.text ?? ''].map(loose).join(' | ');
};

/**
 * Each case (words covered, text) and the text with `suffix` after it: the reader is shown the words before
 * covering (where no look-alike letter is what shows them) and neither it nor the record's text holds them after.
 */
function expectCoveredAsShown(cases: [string, string][], suffix: string) {
  for (const [words, text] of cases.flatMap(([w, t]) => [[w, t] as const, [w, `${t}${suffix}`] as const])) {
    const needle = loose(words);
    if (!/[０𝟎ℐ]/u.test(text)) expect(reads(text), `real: ${JSON.stringify(text)}`).toContain(needle);
    const out = makeCover([words]).apply(text);
    const what = `${words} in ${JSON.stringify(text)} → ${JSON.stringify(out)}`;
    expect(reads(out), what).not.toContain(needle);
    expect(loose(out), what).not.toContain(needle);
  }
}

describe('the covering pass', () => {
  it('covers every recognisable form of a covered word and leaves other words alone', () => {
    fc.assert(
      fc.property(
        fc.oneof(word, accented),
        fc.array(word, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(variants('x').length - 1), { minLength: 1, maxLength: 6 }),
        fc.constantFrom(' ', '\n', '  ', ', ', '\u00a0'),
        (secret, others, picks, sep) => {
          const pool = variants(secret);
          const safe = others.filter((o) => !o.includes(secret) && !secret.includes(o));
          const pieces = [...safe];
          for (const [i, p] of picks.entries()) pieces.splice(i % (pieces.length + 1), 0, pool[p]!);
          const text = pieces.join(sep);
          const cover = makeCover([secret]);
          const out = cover.apply(text);
          for (const v of pool) expect(out).not.toContain(v);
          for (const o of safe) expect(out).toContain(o);
          // Nothing left to find: the pass is complete, and applying it again changes nothing.
          expect(cover.find(out)).toEqual([]);
          expect(cover.apply(out)).toBe(out);
          // Asked again (the cover remembers only what showed nothing), the text is covered as the first time.
          expect(cover.apply(text)).toBe(out);
          expect(cover.find(text)).not.toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("covers a word spelled with any of the confusables library's Latin look-alikes from other scripts", () => {
    // Each letter's look-alikes past Latin Extended-B, as the library lists them — but for those it reads as
    // i or l: I, l and i-like letters look alike themselves, and the cover reads each one way (a known gap).
    const alike = new Map<string, string[]>();
    for (const [c, to] of confusablesMap) {
      if ((c.codePointAt(0) ?? 0) < 0x250 || !/^[a-z]$/i.test(to) || [...c].length !== 1) continue;
      if (/^[il]$/i.test(to)) continue;
      const k = to.toLowerCase();
      alike.set(k, [...(alike.get(k) ?? []), c]);
    }
    const secret = 'pelican';
    const spelled = fc
      .tuple(...[...secret].map((l) => fc.constantFrom(l, ...(alike.get(l) ?? [l]))))
      .map((cs) => cs.join(''));
    fc.assert(
      fc.property(spelled, (word) => {
        const out = makeCover([secret]).apply(`we saw ${word} today`);
        expect(out).not.toContain(word);
      }),
      { numRuns: 300 },
    );
  });

  it('covers a name in a script written without spaces however it is broken, and digits of any script', () => {
    const han = fc.integer({ min: 0x4e00, max: 0x9fa5 }).map((c) => String.fromCodePoint(c));
    const name = fc.array(han, { minLength: 2, maxLength: 4 }).map((cs) => cs.join(''));
    const gap = fc.constantFrom(' ', '\n', '\u3000', '  ', ' \n ');
    fc.assert(
      fc.property(name, name, fc.nat(), gap, fc.boolean(), (secret, other, at, space, coverSpaced) => {
        fc.pre(!other.includes(secret) && !secret.includes(other));
        const cut = 1 + (at % (secret.length - 1));
        const broken = secret.slice(0, cut) + space + secret.slice(cut);
        // Covered as written either way: "山田太郎" finds "山田 太郎", and "山田 太郎" finds "山田太郎".
        const cover = makeCover([coverSpaced ? broken : secret]);
        const text = `今日は${broken}さんと${other}さんに会った。${secret}さん`;
        const out = cover.apply(text);
        expect(out.replace(/\s/g, '')).not.toContain(secret);
        expect(out).toContain(`さんと${other}さんに会った`);
        expect(out.match(new RegExp(REDACTION_BAR, 'g'))).toHaveLength(2);
      }),
      { numRuns: 200 },
    );
    // Written as references or percent-escapes, where no break can be placed in the source: the spaced needle.
    const spaced = makeCover(['山田 太郎']);
    expect(spaced.apply('&#23665;&#30000; &#22826;&#37070;')).toBe(REDACTION_BAR);
    expect(spaced.apply('%E5%B1%B1%E7%94%B0 %E5%A4%AA%E9%83%8E')).toBe(REDACTION_BAR);
    // And the other way round: covered joined, written spaced in references; digits written as references.
    expect(makeCover(['山田太郎']).apply('&#23665;&#30000; &#22826;&#37070;')).toBe(REDACTION_BAR);
    expect(makeCover(['Room 101']).apply('Room &#1777;&#1776;&#1777;')).toBe(REDACTION_BAR);
    // Other scripts' digits as the reader's Markdown shows them: a footnote's number, a table's cells.
    const persian = (t: string) => t.replace(/[\u06f0-\u06f9]/g, (c) => String(c.charCodeAt(0) - 0x6f0));
    for (const [words, text] of [
      ['Room 101', 'Room ۱۰[^a]\n\n[^a]: n'],
      ['PELICAN-7731', '| a |\n|---|\n| PELICAN |\n| ۷۷۳۱ |'],
    ] as const) {
      const needle = loose(words);
      expect(reads(persian(text))).toContain(needle);
      const out = makeCover([words]).apply(text);
      expect(reads(persian(out)), out).not.toContain(needle);
    }
    // Each script's digits, 0 to 9 in one run (side by side for the mathematical ones).
    const zeros = [0x30, 0x660, 0x6f0, 0x966, 0x9e6, 0xe50, 0xff10, 0x1d7ce, 0x1d7ec, 0x1e950];
    const digits = fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 6, maxLength: 10 });
    const spell = (ds: number[], zs: number[]) =>
      ds.map((d, i) => String.fromCodePoint(zs[i % zs.length]! + d)).join('');
    const scripts = fc.array(fc.constantFrom(...zeros), { minLength: 1, maxLength: 3 });
    fc.assert(
      fc.property(digits, scripts, scripts, (ds, coverIn, textIn) => {
        const written = spell(ds, textIn);
        const out = makeCover([spell(ds, coverIn)]).apply(`call ${written} tonight`);
        expect(out).toBe(`call ${REDACTION_BAR} tonight`);
      }),
      { numRuns: 200 },
    );
  });

  it('merges overlapping and touching spans into one run, covering exactly their union', () => {
    const span = fc
      .tuple(fc.nat(60), fc.integer({ min: 1, max: 20 }))
      .map(([start, len]): Span => ({ start, end: start + len }));
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), fc.array(span, { maxLength: 12 }), (text, spans) => {
        const merged = mergeSpans(spans, text.length);
        const covered = (i: number) => spans.some((s) => s.start <= i && i < Math.min(s.end, text.length));
        for (let i = 0; i < text.length; i++)
          expect(merged.some((m) => m.start <= i && i < m.end)).toBe(covered(i));
        for (let k = 1; k < merged.length; k++) expect(merged[k]!.start).toBeGreaterThan(merged[k - 1]!.end);
        const out = applySpans(text, spans);
        expect(out.split(REDACTION_BAR).length - 1).toBe(merged.length);
        // What is not covered is kept, in order.
        let kept = '';
        for (let i = 0; i < text.length; i++) if (!covered(i)) kept += text[i];
        expect(out.replaceAll(REDACTION_BAR, '')).toBe(kept);
      }),
      { numRuns: 300 },
    );
  });

  it('takes the words under each redaction, trimmed of space and punctuation, and points out the extra places', () => {
    const a = 'My codename is PELICAN-7731, keep it between us.';
    const b = 'Sure — pelican-7731 it is. (PELICAN-7731)';
    const start = a.indexOf('PELICAN');
    // The selection took the comma and a space with it: the word is still found elsewhere.
    const cover = coverOf(
      [
        { id: 'a', text: a },
        { id: 'b', text: b },
      ],
      { a: { redactions: [{ start, end: start + 'PELICAN-7731, '.length }] } },
    );
    expect(cover.needles).toEqual(['pelican 7731']);
    expect(extraPlaces(a, [{ start, end: start + 14 }], cover)).toEqual([]);
    expect(extraPlaces(b, [], cover).map((s) => b.slice(s.start, s.end))).toEqual([
      'pelican-7731',
      'PELICAN-7731',
    ]);
    // A selection of nothing but spaces and punctuation covers its span only.
    expect(makeCover([' , ']).needles).toEqual([]);
  });

  it('covers a phrase however it is spelled for a reader to decode: Markdown, escapes, references, URLs', () => {
    // Spellings a Markdown reader, a browser or a URL decodes back to the words, mixed within one phrase.
    const disguises: ((c: string) => string)[] = [
      (c) => c,
      (c) => `**${c}**`,
      (c) => `\`${c}\``,
      (c) => `~~${c}~~`,
      (c) => (/[a-z]/i.test(c) ? `&#${c.codePointAt(0)};` : c),
      (c) => (/[a-z]/i.test(c) ? `&#x${c.codePointAt(0)!.toString(16)};` : c),
      (c) => (c === ' ' ? '+' : c),
      (c) =>
        encodeURIComponent(c).replace(/[a-z]/gi, (l) => `%${l.charCodeAt(0).toString(16).toUpperCase()}`),
      (c) => (c === '&' ? '&amp;' : c === ' ' ? '&nbsp;' : c),
      (c) => (/[.!-]/.test(c) ? `\\${c}` : c),
    ];
    fc.assert(
      fc.property(
        fc.array(word, { minLength: 2, maxLength: 3 }),
        fc.array(fc.nat(disguises.length - 1), { minLength: 30, maxLength: 30 }),
        fc.boolean(),
        (words, picks, linked) => {
          const secret = words.join(' ');
          // Each character (or the phrase's first word, as a link's text) spelled its own way.
          const spelled = [...secret].map((c, i) => disguises[picks[i % picks.length]!]!(c)).join('');
          const first = words[0]!;
          const text = linked
            ? `see [${first}](https://maps.example/?q=${encodeURIComponent(first)})${secret.slice(first.length)} ok`
            : `see ${spelled} ok`;
          const out = makeCover([secret]).apply(text);
          expect(out).toContain(REDACTION_BAR);
          expect(out.startsWith('see ')).toBe(true);
          expect(out.endsWith(' ok')).toBe(true);
          // What a reader decodes from the covered text no longer holds the phrase.
          const read = decodeForReader(out);
          expect(read.toLowerCase().replace(/\s+/g, ' ')).not.toContain(secret);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('reads control characters and noncharacters inside a word as the reader shows them: as nothing', () => {
    const unseen = [
      ...Array.from({ length: 9 }, (_, i) => i),
      0x0b,
      ...Array.from({ length: 18 }, (_, i) => 0x0e + i),
      ...Array.from({ length: 33 }, (_, i) => 0x7f + i),
      0xfdd0,
      0xfffe,
      0xffff,
    ].map((c) => String.fromCharCode(c));
    const hidden = new RegExp(`[${unseen.join('')}]`, 'g');
    fc.assert(
      fc.property(
        fc.constantFrom('Zephyr', 'PELICAN-7731', 'Søren'),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom(...unseen)), { minLength: 1, maxLength: 3 }),
        (secret, inserts) => {
          const chars = [...secret];
          for (const [at, c] of inserts) chars.splice(1 + (at % (chars.length - 1)), 0, c);
          const out = makeCover([secret]).apply(`Ask ${chars.join('')} now.`);
          // As a browser or the Atom feed shows it: without them.
          expect(loose(out.replace(hidden, ''))).not.toContain(loose(secret));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('is not fooled by separators, strokes, touching selections or symbols', () => {
    const cases: [string[], string, string][] = [
      // An MCP tool named after a server: underscores read as word breaks.
      [['Zephyr Station'], 'zephyr_station__lookup', '████████__lookup'],
      [['Łódź'], 'We met in Lodz, then LÓDŹ again.', 'We met in ████████, then ████████ again.'],
      [['Søren'], 'soren and SØREN', '████████ and ████████'],
      [['hunter2$%'], 'pw hunter2$% and hunter2', 'pw ████████ and ████████'],
      [['🦩'], 'a 🦩 here', 'a ████████ here'],
      [
        ['PELICAN-7731'],
        'pelican–7731 and pelican 7731 and PELICAN_7731',
        '████████ and ████████ and ████████',
      ],
    ];
    for (const [words, text, out] of cases) expect(makeCover(words).apply(text)).toBe(out);
    // "Zephyr" selected, then the words around it: the runs merge into one bar, yet "Zephyr" alone is covered.
    const text = 'codename Zephyr Station';
    const cover = coverOf([{ id: 't', text }], {
      t: {
        redactions: [
          { start: 9, end: 15 },
          { start: 0, end: 23 },
        ],
      },
    });
    expect(cover.apply('Zephyr says hi')).toBe('████████ says hi');
  });

  it('covers what a generated fuzz of Markdown found shown and uncovered (stop 50)', () => {
    const cases: [string, string][] = [
      // A footnote bracket before a needle's own `^`: the quick skeleton dropped the `^`.
      ['x^2', '_x_[^2](u)'],
      ['E=mc^2', '_E=mc_[^2](https://w.example "t")'],
      ['pel^ican', '_pel_[^ican](u "t")'],
      ['^=$', '[^]( )=$'],
      ['^=$', '[^=]( )$'],
      ['^hunter2', '[^](u "t")hunter2'],
      // Digits at a line's start were read as a list's marker, though only digits and `.` or `)` are one.
      ['12 Maple Street', '12 [Maple](https://m.example "map") Street'],
      ['PELICAN-7731', 'PELICAN\n> 7731'],
      ['PELICAN-7731', 'PELICAN\n# 7731'],
      ['Room 101', 'Room\n# 101'],
      // Digits at a line's start that are no list's number after all (the review): a decimal, a heading's, a
      // paragraph's continuation numbered other than 1.
      ['1.5 Maple Street', '1.5 [Maple](u "t") Street'],
      ['2) Maple Street', '# 2) [Maple](u "t") Street'],
      ['2. Maple Street', 'Ave\n2. [Maple](u "t") Street'],
      // Lines a reader is not shown, between a phrase's words: a link reference's definition, a setext underline.
      ['Zephyr Station', 'Zephyr\n\n[r]:u\nStation'],
      ['Zephyr Station', 'Zephyr\n\n[r]: /u "t"\nStation'],
      ['Zephyr Station', 'Zephyr\n=\nStation'],
      ['Zephyr Station', 'Zephyr\n  ===  \nStation'],
      // …but a line that only looks like a definition is shown.
      ['Room 101', '[u]:> Ro&#x6f;M\n# 101'],
      ['Café Zéphyr', '[u]:\uff38 CaFÉ\\\nZÉPhYr'],
      // A mark, or a line's end, that is one grapheme with what follows it (the fold read graphemes).
      ['PELICAN', '*PELI*\u200dCAN é'],
      ['PELICAN', '``pe``\u0301lICan'],
      ["O'Brien", "``o'B``\u034fRien"],
      ['Room 101', 'Room\r\n# 101 é'],
      // A percent-escape a reader sees as written, in a link the reader's renderer shows.
      ['42 Maple Street', '[Flat %42](u "t") Maple Street'],
      // A percent-escape a reader sees as written: decoding it ate the needle's first letter.
      ['a^b$c', '%7a^b$C'],
      ['pelican', 'x%20pelican'],
      // A task list's checkbox between a phrase's words: the reader shows a box, not the `[x]` (stop 51).
      ['PELICAN-7731', 'PELICAN\n- [x] 7731'],
      ['PELICAN-7731', 'PELICAN\n\n* [ ] 7731'],
      ['Room 101', 'Room\n1. [X] 101'],
      ['Zephyr Station', '> Zephyr\n> + [x]\tStation'],
    ];
    // Each also with a letter beyond ASCII after it: the full fold reads it, not the quick look.
    expectCoveredAsShown(cases, ' é');
  });

  it("covers what a fuzz judged by the reader's own renderer found shown and uncovered (stop 51)", () => {
    const cases: [string, string][] = [
      // A digit NFKD reads as a digit, which the look-alike map took for the letter O.
      ['Room 101', 'Room 1０1'],
      ['Room 101', 'Room 1𝟎1'],
      ['Room 101', 'Room 1&#xff10;1'],
      ['Iris', 'ℐris'],
      // An ordered list's marker right before a phrase's next word: both readings of the line's digits missed it.
      ['PELICAN-7731', 'PELICAN\n1. 7731'],
      ['Room 101', 'Room\n1) 101'],
      ['12 Maple Street', '12\n1. Maple Street'],
      // A number the reader adds: a footnote reference's, a later list item's.
      ['Room 101', 'Room 10[^1]\n\n[^1]: note'],
      ['hunter2', 'x[^a] hunter[^b]\n\n[^a]: a\n\n[^b]: b'],
      ['Room 101', '100. Room\n1. x'],
      // Table cells and rows, which the reader shows apart.
      ['Zephyr Station', '| Zephyr | Station |\n|---|---|'],
      ['PELICAN-7731', '| a |\n|---|\n| PELICAN |\n| 7731 |'],
      // A footnote's definition between the words: the reader shows it at the end.
      ['Zephyr Station', 'Zephyr\n[^1]:n\n\nStation'],
      ['Café Zéphyr', 'Café\n[^1]:n\n# Zéphyr'],
      ['Zephyr Station', 'Zephyr\n\n[^1]: a note\n\nStation x[^1]'],
      // Hidden lines in a quote, and definitions over several lines.
      ['Zephyr Station', 'Zephyr\n>~~~b\nStation'],
      ['Zephyr Station', 'Zephyr\n>[r]:u\nStation'],
      ['Zephyr Station', '>Zephyr\n>=\nStation'],
      ['Café Zéphyr', 'Café\n\n[r]:\n/\nZéphyr'],
      ['Zephyr Station', 'Zephyr\n\n[\\]]:t\nStation'],
      ['Zephyr Station', 'Zephyr\n\n[r]: /u "a\nb"\nStation'],
      // Found by the generated splice test once it joined with these: a word that is whole only without a link's
      // destination.
      ['ab-12', '[a](u)b\n\n[r]:\n/u\n 12'],
      // A second round: a footnote's number however its reference is written (an undefined one before it, the
      // definitions first, Markdown within the phrase), a word split by a link with a title, a list opened on its
      // parent item's line.
      ['Room 101', 'x[^z] Room 10[^b]\n\n[^b]: n'],
      ['Room 101', '[^b]: n\n\n[^a]: m\n\nRoom 10[^a]'],
      ['Room 101', '[R](u "t")oom 10[^a]\n\n[^a]: n'],
      ['PELICAN-7731', 'PELICAN\\\n773[^a]\n\n[^a]: n'],
      ['Room 101', '_Room 10_[^a]\n\n[^a]: n'],
      ['Room 101', '[R](u "t")oom\n> [r]: /u\n101'],
      ['Café Zéphyr', '_C_**afé**\n>[r]:u\nZéphyr'],
      ['Room 101', '> Room\n> ===\n[1](u "t")01'],
      ['PELICAN-7731', '1. 7730. PELICAN\n   1. x'],
      ['Room 101', '> 1. 100. Room\n>    1. x'],
      // A third: a footnote's number in an ordered list's item, which the reader's text content holds too.
      ['Room 101', 'Room\n1. 10[^a]\n[^a]:'],
      ['PELICAN-7731', 'PELICAN\n\n1. 773[^a]\n\n[^a]: n'],
    ];
    // Each also with a paragraph beyond ASCII after it (a table ends at a line that is no row).
    expectCoveredAsShown(cases, '\n\né');
  });

  it('covers a long needle split by a link anywhere along it, past the characters read exactly either side', () => {
    // A secret with no breaks (so no phrase's words give it away) and longer than candidates.ts's REACH.
    const secret = 'sk4f9A8b7C6d5E4f3A2b1C0d9E8f7A6b5C4d3E2f1A0b9C8d7';
    const cases: [string, string][] = [];
    for (let k = 1; k < secret.length; k++) {
      const [head, tail] = [secret.slice(0, k), secret.slice(k)];
      cases.push([secret, `key [${head}](u "t")${tail} end`], [secret, `key ![${head}](u)${tail}`]);
      cases.push([secret, `key [${head}][r]${tail} end\n\n[r]: /u`]);
    }
    expectCoveredAsShown(cases, '\n\né');
  });

  it('covers a needle however Markdown splices it, wherever the reader is shown it (generated)', () => {
    const needles = [
      'PELICAN',
      'Zephyr Station',
      'ab-12',
      'x^2',
      'E=mc^2',
      '$HOME',
      'PELICAN-7731',
      'Room 101',
      '12 Maple Street',
      '^hunter2',
      // Longer than the characters read exactly either side of a split (candidates.ts REACH): split past them.
      'The ledger kept since 1887 in the east wing of Halvard Quay',
      'sk4f9A8b7C6d5E4f3A2b1C0d9E8f7A6b5C4d3E2f1A0b9C8d7',
    ];
    // Marks between a needle's pieces, and around each piece: emphasis, code, links, images, footnotes, references,
    // HTML, block markers at a line's start, hidden lines, footnote definitions, table pipes, escapes and spellings
    // a reader decodes.
    const joints = [
      '',
      '',
      '*',
      '**',
      '_',
      '`',
      '~~',
      '](u "t")',
      '](u)',
      '][r]',
      '[^1]',
      '<b>',
      '</b>',
      '\n> ',
      '\n- ',
      '\n',
      '\n# ',
      '![',
      '[',
      ']',
      '(',
      ')',
      '^',
      '=',
      '$',
      ' ',
      '\\*',
      '&#65;',
      '%41',
      '&amp;',
      '<!-- c -->',
      '[^',
      '](',
      '\n```\n',
      '\n- [x] ',
      '\n1. [ ] ',
      '\n1. ',
      '\n1) ',
      '\n[^1]:n\n\n',
      '\n>=\n',
      '\n\n[r]:\n/u\n',
      ' | ',
    ];
    const wraps = [
      'X',
      'X',
      '*X*',
      '_X_',
      '**X**',
      '`X`',
      '~~X~~',
      '[X](u "t")',
      '[X](u)',
      '![X](u)',
      '[X][r]',
      '<X>',
      'X[^1]',
      '[^X]',
      '^X',
      'X^',
      '$X$',
      '(X)',
      '\\X',
    ];
    const breaks = [' ', '-', '_', '+', '\n', '  ', '\t'];
    const text = fc.constantFrom(...needles).chain((needle) =>
      fc
        .tuple(
          fc.array(fc.boolean(), { minLength: needle.length, maxLength: needle.length }),
          fc.array(fc.constantFrom(...breaks), { minLength: needle.length, maxLength: needle.length }),
          fc.uniqueArray(fc.integer({ min: 1, max: needle.length - 1 }), { maxLength: 3 }),
          fc.array(fc.tuple(fc.constantFrom(...joints), fc.constantFrom(...wraps)), {
            minLength: 4,
            maxLength: 4,
          }),
          fc.constantFrom('', '', '> ', '- ', '# ', '1. ', '- [x] ', '[', '![', 'see '),
          fc.constantFrom('', '', '\n\n[r]: /u', '\n\n[^1]: note', ' é'),
        )
        .map(([flips, seps, cuts, marks, lead, tail]) => {
          let written = '';
          for (let i = 0; i < needle.length; i++) {
            const c = needle[i]!;
            written += c === ' ' || c === '-' ? seps[i] : flips[i] ? c.toLowerCase() : c;
          }
          const at = [0, ...cuts.filter((k) => k < written.length).sort((a, b) => a - b), written.length];
          const pieces = at.slice(1).map((end, i) => written.slice(at[i], end));
          const body = pieces.map((p, i) => (i ? marks[i]![0] : '') + marks[i]![1].replace('X', p)).join('');
          return { needle, text: lead + body + tail };
        }),
    );
    // With and without the numbers the reader adds; a table's cells apart.
    const reads = (t: string) => {
      const shown = shownText(t);
      return [shown.text, shown.numbered?.text ?? '']
        .join(' ¦ ')
        .toLowerCase()
        .replace(/[ \t\n\r_+-]+/g, ' ');
    };
    fc.assert(
      fc.property(text, ({ needle, text }) => {
        const cover = makeCover([needle]);
        const out = cover.apply(text);
        for (const n of cover.needles) expect(reads(out)).not.toContain(n);
      }),
      { numRuns: 1500 },
    );
  });
});

describe('a covered word inside another word (ADR 0105)', () => {
  it('covers the whole word around it, in scripts written with spaces', () => {
    const cover = makeCover(['Ann']);
    expect(cover.apply('annual meeting with Joanne, Ann.')).toBe(
      `${REDACTION_BAR} meeting with ${REDACTION_BAR}, ${REDACTION_BAR}.`,
    );
    expect(makeCover(['Кай']).apply('Кайман и Кай')).toBe(`${REDACTION_BAR} и ${REDACTION_BAR}`);
    // Written without spaces, a "word" would be the sentence: only the match is covered.
    expect(makeCover(['山田']).apply('山田さんは元気')).toBe(`${REDACTION_BAR}さんは元気`);
  });

  it('leaves no letter of a word beside a bar, whatever the words around it', () => {
    const cover = makeCover(['ann']);
    // Letters, and what does not show between them: a soft hyphen, a joiner, emphasis, a styled letter.
    const unit = fc.constantFrom(
      'a',
      'n',
      'u',
      'l',
      'J',
      'o',
      'e',
      ' ',
      '.',
      '-',
      '\n',
      '\u00AD',
      '\u200D',
      '*',
      '\u{1D42E}',
    );
    const shown = (s: string) => s.replace(/\u00AD|\u200D|\*/g, '').replace(/\u{1D42E}/gu, 'u');
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 40 }), (t) => {
        const out = shown(cover.apply(t));
        expect(out).not.toMatch(/[a-z]█|█[a-z]/i);
        expect(out.toLowerCase()).not.toContain('ann');
      }),
      { numRuns: 1000 },
    );
  });

  it('a typed phrase selects where it shows, not the word around it', () => {
    const text = 'Met Joanne, then Ann at the annual dinner.';
    const cover = makeCover(['Ann']);
    expect(cover.matches(text).map((s) => text.slice(s.start, s.end))).toEqual(['ann', 'Ann', 'ann']);
    expect(cover.find(text).map((s) => text.slice(s.start, s.end))).toEqual(['Joanne', 'Ann', 'annual']);
  });
});
