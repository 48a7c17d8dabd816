import fc from 'fast-check';
import { expect, it } from 'vitest';
import { THREAD_PAGE, threadPages, threadWindow, turnWeight } from '../../src/markdown/index.ts';

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

/** Strings without JSON escapes, so a record's JSON length is its strings' lengths plus its structure. */
const plain = (max: number) => fc.string({ unit: fc.constantFrom(...'abc XYZ.:/-019'), maxLength: max });

/** A message record as the lexicon allows it: text, tool steps, refs and mentions. */
const record = fc.record(
  {
    text: plain(2000),
    steps: fc.array(fc.record({ name: plain(64), summary: plain(250) }, { requiredKeys: ['name'] }), {
      maxLength: 100,
    }),
    refs: fc.array(fc.record({ uri: plain(300), cid: plain(100) }), { maxLength: 50 }),
    mentions: fc.array(plain(100), { maxLength: 50 }),
  },
  { requiredKeys: [] },
);

it("weighs a turn by all it carries, and what the reader adds to it: a page's data stays within its bound", () => {
  fc.assert(
    fc.property(record, (r) => {
      // The turn as the reader's API sends it: the record, each ref with its state and a quote of up to 1,000
      // characters, each mention with a handle.
      const sent = {
        record: r,
        refs: (r.refs ?? []).map((ref) => ({ ...ref, state: 'changed', text: 'q'.repeat(1000) })),
        mentions: (r.mentions ?? []).map((did) => ({ did, handle: 'h'.repeat(64) })),
      };
      expect(JSON.stringify(sent).length).toBeLessThanOrEqual(turnWeight(r) + 200);
    }),
    { numRuns: 300 },
  );
  // The shape that text alone let through: 100 turns with no text and the most of everything else. A page of
  // them now carries about its bound, not 13 MB.
  const heavy = {
    steps: Array.from({ length: 100 }, () => ({ name: 'n'.repeat(64), summary: 's'.repeat(250) })),
    refs: Array.from({ length: 50 }, (_, i) => ({ uri: `at://did:plc:x/app.bsky.feed.post/${i}`, cid: 'c' })),
    mentions: Array.from({ length: 50 }, () => 'did:plc:mentioned000000000000001'),
  };
  const weights = Array.from({ length: 100 }, () => turnWeight(heavy));
  for (const [first, end] of threadPages(weights)) {
    const bytes = JSON.stringify(Array.from({ length: end - first }, () => heavy)).length;
    expect(end - first === 1 || bytes <= THREAD_PAGE.chars).toBe(true);
  }
  expect(threadPages(weights).length).toBeGreaterThan(50);
});
