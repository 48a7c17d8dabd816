import fc from 'fast-check';
import { expect, it } from 'vitest';
import { extendsReviewed, repliesToHold } from '../../src/publish/review.ts';

// The pure rules of issue 24 (ADR 0046): what a live append may send on its own.
const ids = fc.array(fc.constantFrom('a', 'b', 'c', 'd'), { maxLength: 6 });

it('a path extends the reviewed one exactly when it starts with it', () => {
  fc.assert(
    fc.property(ids, ids, (path, reviewed) => {
      expect(extendsReviewed(path, reviewed)).toBe(
        path.slice(0, reviewed.length).join() === reviewed.join() && reviewed.length <= path.length,
      );
      expect(extendsReviewed([...reviewed, ...path], reviewed)).toBe(true);
    }),
  );
});

const turns = fc.array(
  fc.record({
    role: fc.constantFrom('player' as const, 'npc' as const),
    withheld: fc.constantFrom(true, false, undefined),
    published: fc.boolean(),
  }),
  { maxLength: 12 },
);

it('held with a question: exactly its unpublished replies the Player has not chosen for, up to the next question', () => {
  fc.assert(
    fc.property(turns, (ts) => {
      const path = ts.map((t, i) => ({ id: `m${i}`, role: t.role }));
      const choices = Object.fromEntries(
        ts.flatMap((t, i) => (t.withheld === undefined ? [] : [[`m${i}`, { withheld: t.withheld }]])),
      );
      const published = new Set(ts.flatMap((t, i) => (t.published ? [`m${i}`] : [])));
      const expected = ts.flatMap((t, i) => {
        const question = ts.slice(0, i).findLastIndex((q) => q.role === 'player');
        const held = question >= 0 && ts[question]!.withheld === true;
        return t.role === 'npc' && held && !t.published && t.withheld === undefined ? [`m${i}`] : [];
      });
      expect(repliesToHold(path, choices, published)).toEqual(expected);
    }),
  );
});

it('an explicit release (withheld: false) is kept', () => {
  const path = [
    { id: 'q', role: 'player' as const },
    { id: 'r1', role: 'npc' as const },
    { id: 'r2', role: 'npc' as const },
    { id: 'q2', role: 'player' as const },
    { id: 'r3', role: 'npc' as const },
  ];
  expect(repliesToHold(path, { q: { withheld: true }, r1: { withheld: false } }, new Set())).toEqual(['r2']);
});
