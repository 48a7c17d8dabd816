import fc from 'fast-check';
import { beforeEach, describe, expect, it, vi } from 'vitest';

// The Markdown parse, counted: it must run only where Markdown may hide a covered word.
const parsed = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../src/redaction/markdown.ts', async (original) => {
  const real = await original<typeof import('../../src/redaction/markdown.ts')>();
  return {
    ...real,
    shownText: (s: string) => {
      parsed.count++;
      return real.shownText(s);
    },
  };
});
const { makeCover } = await import('../../src/redaction/index.ts');

beforeEach(() => {
  parsed.count = 0;
});

describe('the cover reads Markdown only where it may hide a covered word', () => {
  const cover = makeCover(['PELICAN', 'Zephyr Station']);

  it('does not parse text with no split candidate, Markdown-heavy or not, ASCII or not', () => {
    const texts = [
      'A plain sentence about birds.',
      '# Notes\n\n- **bold** and _it_\n- [a link](https://e.example "t") and `code`\n\n| a | b |\n|---|---|\n| c | d |',
      'Café — “quoted” and ½ and 🦩, with *emphasis* and <https://e.example>.',
      // A link whose text ends as a covered word begins, and another followed by how one ends, after a space.
      'see [the map](https://m.example) and [a cap](https://c.example) nor',
    ];
    for (const t of texts) expect(cover.apply(t)).toBe(t);
    // A covered word written plainly, however often, is the fold's to find.
    expect(cover.apply('The PELICAN, a *pelican*: pelican.')).toBe('The ████████, a ████████: ████████.');
    expect(parsed.count).toBe(0);
  });

  it('does not parse generated prose and Markdown that holds no beginning and end of a covered word', () => {
    const word = fc.stringMatching(/^[b-dfgj-mo-z]{1,8}$/); // no letters that begin or end "pelican", "zephyr station"
    const mark = fc.constantFrom('', '*', '_', '**', '`', '~~');
    const piece = fc.tuple(mark, word).map(([m, w]) => `${m}${w}${m}`);
    const line = fc.array(piece, { minLength: 1, maxLength: 8 }).map((ws) => ws.join(' '));
    const prefix = fc.constantFrom('', '- ', '> ', '1. ', '# ', '| ');
    fc.assert(
      fc.property(fc.array(fc.tuple(prefix, line), { maxLength: 10 }), (lines) => {
        const text = lines.map(([p, l]) => p + l).join('\n');
        cover.apply(text);
        cover.apply(`${text} é`);
      }),
      { numRuns: 200 },
    );
    expect(parsed.count).toBe(0);
  });

  it('parses where a covered word is split by Markdown, and covers it', () => {
    for (const t of ['_PELI_*CAN*', '[PELI](https://x "t")CAN', 'Zephyr\n> Station', '![PELI](x "t")CAN é']) {
      parsed.count = 0;
      expect(cover.apply(t)).toContain('█');
      expect(parsed.count).toBeGreaterThan(0);
    }
  });
});
