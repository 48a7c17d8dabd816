import fc from 'fast-check';
import { expect, it } from 'vitest';
import { THREAD_PAGE, threadPages, threadWindow } from '../../src/markdown/index.ts';

it('splits a thread into pages that hold every turn once, in order, each as full as its bounds allow', () => {
  const bounds = { turns: 5, chars: 100 };
  fc.assert(
    fc.property(fc.array(fc.nat(150), { maxLength: 60 }), (lengths) => {
      const pages = threadPages(lengths, bounds);
      // Every turn once, in order, on some page; no page empty but an empty thread's one.
      expect(pages[0]![0]).toBe(0);
      expect(pages.at(-1)![1]).toBe(lengths.length);
      for (const [i, [first, end]] of pages.entries()) {
        if (i > 0) expect(first).toBe(pages[i - 1]![1]);
        if (lengths.length) expect(end).toBeGreaterThan(first);
        const turns = end - first;
        const chars = lengths.slice(first, end).reduce((a, b) => a + b, 0);
        // Within the bounds, unless the page is one turn longer than them.
        expect(turns).toBeLessThanOrEqual(bounds.turns);
        if (turns > 1) expect(chars).toBeLessThanOrEqual(bounds.chars);
        // As full as allowed: the next turn would not have fitted.
        if (end < lengths.length)
          expect(turns === bounds.turns || chars + lengths[end]! > bounds.chars).toBe(true);
      }
    }),
    { numRuns: 500 },
  );
});

it('finds a page by its number, and no page past the last', () => {
  const lengths = Array.from({ length: 250 }, () => 10);
  expect(threadWindow(lengths, 1)).toEqual({
    page: 1,
    pages: 3,
    first: 0,
    end: THREAD_PAGE.turns,
    total: 250,
  });
  expect(threadWindow(lengths, 3)).toEqual({ page: 3, pages: 3, first: 200, end: 250, total: 250 });
  expect(threadWindow(lengths, 4)).toBeNull();
  // A turn longer than a page's characters is a page of its own.
  const long = [10, THREAD_PAGE.chars + 1, 10];
  expect(threadPages(long)).toEqual([
    [0, 1],
    [1, 2],
    [2, 3],
  ]);
  expect(threadWindow([], 1)).toEqual({ page: 1, pages: 1, first: 0, end: 0, total: 0 });
});
