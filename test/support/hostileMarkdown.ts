// Texts any repo can publish that the reader's Markdown parser cannot read in bounded time or stack (src/markdown).

/** Shapes that took the parser seconds, or overflowed the stack of the parse or of the reader's render. */
export const HOSTILE_MARKDOWN: [string, string][] = [
  ['5,000 nested quotes', `${'>'.repeat(5000)} a`],
  ['2,000 nested lists on a line', `${'- '.repeat(2000)}a`],
  [
    'lists nested by indentation',
    Array.from({ length: 100 }, (_, i) => `${' '.repeat(2 * i)}- a`).join('\n'),
  ],
  ['nested emphasis', `${'*a '.repeat(3000)}x${' a*'.repeat(3000)}`],
  ['a run of emphasis marks', `${'*'.repeat(7500)}a${'*'.repeat(7500)}`],
  ['emphasis marks and letters', '*a'.repeat(7500)],
  ['nested links', `${'['.repeat(3000)}a${'](b)'.repeat(3000)}`],
  ['unclosed destinations', '](<'.repeat(5000)],
  ['unclosed comments in a table', '|<!--'.repeat(3000)],
  ['5,000 quotes', '> a\n\n'.repeat(5000)],
  ['2,500 list items each with a quote', '- > a\n'.repeat(2500)],
  ['2,500 lists between paragraphs', '- a\n\nb\n\n'.repeat(2500)],
  ['2,500 setext headings', 'a\n---\n'.repeat(2500)],
  ['2,000 definitions', '[a]: b\n'.repeat(2000)],
  ['2,000 paragraphs', 'a\n\n'.repeat(2000)],
  ['60,000 characters of prose', 'word '.repeat(12_000)],
  ['25,000 lines of a letter', 'a\n'.repeat(25_000)],
  // An attacker's review of the bounds (stop 52): lines ended by \r alone, lazy lines, a table, a definition.
  ['5,000 nested quotes after a \\r', `a\r${'>'.repeat(5000)} deep`],
  ['5,000 quotes between lines ended by \\r', '>a\r\r'.repeat(5000)],
  ['2,500 list items each with a quote, lines ended by \\r', '- > a\r'.repeat(2500)],
  ['a list item and 5,000 lazy lines', `- a\n${'b\n'.repeat(4998)}`],
  ['32 quotes and 5,000 lazy lines', `${'>'.repeat(32)}a\n${'b\n'.repeat(4998)}`],
  ['a footnote and 5,000 lazy lines', `[^1]: a\n${'b\n'.repeat(4998)}`],
  ['2,000 columns padded over 500 rows', `${'a|'.repeat(2000)}\n${'-|'.repeat(2000)}\n${'b\n'.repeat(500)}`],
  ['a table of 2,500 columns (10,000 characters, 0.44 s)', `${'a|'.repeat(2500)}\n${'-|'.repeat(2500)}`],
  [
    'a 40,000-character definition referenced 1,400 times',
    `[a]: ${'x'.repeat(40_000)}\n\n${`${'[a] '.repeat(199)}\n\n`.repeat(7)}`,
  ],
  ['199 nested footnote definitions', `${Array.from({ length: 199 }, (_, i) => `[^${i}]:`).join('')}x`],
];
