import fc from 'fast-check';
import type { Nodes } from 'mdast';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmFromMarkdown } from 'mdast-util-gfm';
import { gfm } from 'micromark-extension-gfm';
import { describe, expect, it } from 'vitest';
import { MARKDOWN_BOUNDS, readsAsMarkdown } from '../../src/markdown/index.ts';
import { HOSTILE_MARKDOWN as HOSTILE } from '../support/hostileMarkdown.ts';

const parse = (s: string) => fromMarkdown(s, { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] });

const CONTAINERS = new Set(['blockquote', 'listItem', 'footnoteDefinition']);
const INLINE = new Set(['emphasis', 'strong', 'delete', 'link', 'linkReference']);
/** The deepest nesting of containers, and of inline marks, in a parsed text. */
function depths(node: Nodes): { containers: number; inline: number } {
  let containers = 0;
  let inline = 0;
  const walk = (n: Nodes, c: number, i: number) => {
    const cc = c + (CONTAINERS.has(n.type) ? 1 : 0);
    const ii = i + (INLINE.has(n.type) ? 1 : 0);
    containers = Math.max(containers, cc);
    inline = Math.max(inline, ii);
    if ('children' in n) for (const child of n.children) walk(child as Nodes, cc, ii);
  };
  walk(node, 0, 0);
  return { containers, inline };
}

/** A long reply as a Model writes one: headings, lists, a table, code, emphasis and links. */
const paragraph = fc
  .array(
    fc.oneof(
      {
        weight: 12,
        arbitrary: fc.constantFrom('The library opens at nine', 'and', 'the reading room', 'on Sundays'),
      },
      fc.constantFrom(
        '**bold words**',
        '*a stressed phrase*',
        '`inline_code()`',
        '[a link](https://example.com/a_b)',
        'some_snake_case name',
        'a < b and c > d',
        '~~struck~~',
      ),
    ),
    { minLength: 5, maxLength: 40 },
  )
  .map((w) => `${w.join(' ')}.`);
const block = fc.oneof(
  paragraph,
  paragraph.map((p) => `## ${p.slice(0, 40)}`),
  fc.array(paragraph, { minLength: 2, maxLength: 12 }).map((items) => items.map((i) => `- ${i}`).join('\n')),
  fc
    .array(paragraph, { minLength: 2, maxLength: 12 })
    .map((items) => items.map((i, n) => `${n + 1}. ${i}`).join('\n')),
  fc
    .array(fc.tuple(fc.nat(99), paragraph), { minLength: 2, maxLength: 15 })
    .map((rows) =>
      ['| n | note |', '|---|---|', ...rows.map(([n, p]) => `| ${n} | ${p.slice(0, 60)} |`)].join('\n'),
    ),
  fc
    .array(
      fc.constantFrom(
        '  if (a < b && c[i] > 0) {',
        '    total_sum += x * y;',
        '  }',
        '<div class="a">',
        '# comment',
      ),
      {
        minLength: 3,
        maxLength: 40,
      },
    )
    .map((lines) => ['```ts', ...lines, '```'].join('\n')),
  paragraph.map((p) => `> ${p}`),
);
const reply = fc.array(block, { minLength: 1, maxLength: 12 }).map((b) => b.join('\n\n'));

/** Lines of containers, indentation and inline marks: shapes that nest. */
const nesting = fc
  .array(
    fc.tuple(
      fc.nat(4),
      fc.array(fc.constantFrom('> ', '>', '- ', '* ', '1. ', '  ', '[^a]: ', '\t'), { maxLength: 4 }),
      fc.array(fc.constantFrom('*', '_', '**', '[', '](u)', 'a', ' ', '~~'), { maxLength: 8 }),
      fc.boolean(),
    ),
    { minLength: 1, maxLength: 10 },
  )
  .map((lines) =>
    lines
      .map(
        ([indent, marks, inline, blank]) =>
          ' '.repeat(indent) + marks.join('') + inline.join('') + (blank ? '\n' : ''),
      )
      .join('\n'),
  );

describe('what the reader shows as Markdown', () => {
  it('shows each shape that took the parser seconds, or overflowed a stack, as written', () => {
    for (const [name, text] of HOSTILE) expect(readsAsMarkdown(text), name).toBe(false);
    // Each bound on its own, just past it and just within it.
    const b = MARKDOWN_BOUNDS;
    expect(readsAsMarkdown('a'.repeat(b.chars))).toBe(true);
    expect(readsAsMarkdown('a'.repeat(b.chars + 1))).toBe(false);
    expect(readsAsMarkdown('a\n'.repeat(b.lines - 1))).toBe(true);
    expect(readsAsMarkdown('a\n'.repeat(b.lines))).toBe(false);
    expect(readsAsMarkdown(`${'>'.repeat(b.depth)}a`)).toBe(true);
    expect(readsAsMarkdown(`${'>'.repeat(b.depth + 1)}a`)).toBe(false);
    expect(readsAsMarkdown(`${' '.repeat(2 * b.depth + 1)}a`)).toBe(false);
    expect(readsAsMarkdown('- a\n'.repeat(b.blockLines))).toBe(true);
    expect(readsAsMarkdown('- a\n'.repeat(b.blockLines + 1))).toBe(false);
    expect(readsAsMarkdown('*'.repeat(b.perBlock))).toBe(true);
    expect(readsAsMarkdown(`${'<'.repeat(b.perBlock)}\n[`)).toBe(false);
    // A blank line starts the count again, but the whole text has a bound too.
    const third = Math.floor(b.perBlock / 2);
    expect(readsAsMarkdown(`${'_'.repeat(third)}\n\n${'_'.repeat(third)}\n\n${'_'.repeat(third)}`)).toBe(
      true,
    );
    expect(
      readsAsMarkdown(`${`${'~'.repeat(b.perBlock)}\n\n`.repeat(Math.ceil(b.total / b.perBlock))}`),
    ).toBe(false);
  });

  it('formats long replies as a Model writes them', () => {
    fc.assert(
      fc.property(reply, (text) => {
        expect(readsAsMarkdown(text), text.slice(0, 200)).toBe(true);
      }),
      { numRuns: 300 },
    );
    // Large enough to mean something: some generated replies are several thousand characters (a fixed sample, so
    // this says what the generator makes, not what one run happened to draw).
    const sizes = fc.sample(reply, { numRuns: 300, seed: 52 }).map((t) => t.length);
    expect(Math.max(...sizes)).toBeGreaterThan(8000);
  });

  it('counts never fall short of what the parser nests', () => {
    // Small bounds, so generated text passes them often: whatever passes nests no deeper than they say.
    const bounds = { ...MARKDOWN_BOUNDS, depth: 4, perBlock: 12 };
    let passed = 0;
    let deepest = 0;
    fc.assert(
      fc.property(nesting, (text) => {
        if (!readsAsMarkdown(text, bounds)) return;
        passed++;
        const d = depths(parse(text));
        deepest = Math.max(deepest, d.containers);
        expect(d.containers, JSON.stringify(text)).toBeLessThanOrEqual(bounds.depth);
        expect(d.inline, JSON.stringify(text)).toBeLessThanOrEqual(bounds.perBlock / 2);
      }),
      { numRuns: 5000 },
    );
    // The generator reaches the bound, so the property is tried where it matters.
    expect(passed).toBeGreaterThan(300);
    expect(deepest).toBeGreaterThanOrEqual(bounds.depth - 1);
  });
});
