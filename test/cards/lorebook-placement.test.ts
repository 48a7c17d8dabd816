import type { ModelMessage } from 'ai';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { passesRoll, placement, triggerEntries, worldInfoToBook } from '../../src/cards/lorebook.ts';
import { withLoreAtDepth } from '../../src/turn/prompt.ts';
import { book, entry, word } from '../support/lore.ts';

// SillyTavern's entry probability (rolled through an injected random source), @depth placement (entries put into
// the history, not the system prompt), and the budget bounding what enters and what recursion may read. Pure.
const contents = (out: { content: string }[]) => out.map((t) => t.content);
const never = () => 0.999_999;

it('an entry goes in exactly when its roll passes: random × 100 ≤ probability, unless it does not use probability (property)', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 100 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      fc.option(fc.boolean(), { nil: undefined }),
      fc.boolean(),
      (probability, roll, useProbability, constant) => {
        const e = entry({
          keys: ['heron'],
          content: 'Herons nest here.',
          constant,
          extensions: { probability, ...(useProbability === undefined ? {} : { useProbability }) },
        });
        let rolls = 0;
        const random = () => {
          rolls++;
          return roll;
        };
        const out = triggerEntries([book([e])], ['a heron'], 8_000, 3, random);
        const skip = useProbability === false || probability === 100;
        // Constant entries roll as keyed ones do (SillyTavern: "activated by any means").
        expect(out.length).toBe(skip || roll * 100 <= probability ? 1 : 0);
        expect(rolls).toBe(skip ? 0 : 1);
      },
    ),
  );
  // Probability 0 never goes in with a real source; an entry without the fields always does.
  const zero = entry({ keys: ['heron'], extensions: { probability: 0, useProbability: true } });
  expect(triggerEntries([book([zero])], ['heron'], 8_000, 3, never)).toEqual([]);
  expect(passesRoll(entry({}), never)).toBe(true);
  // A World Info file's own fields (top-level there) are carried to extensions and honoured.
  const wi = worldInfoToBook(
    { entries: { 0: { uid: 0, key: ['heron'], content: 'H', probability: 10, useProbability: true } } },
    'Birds',
  );
  expect(triggerEntries([wi], ['heron'], 8_000, 3, never)).toEqual([]);
  expect(triggerEntries([wi], ['heron'], 8_000, 3, () => 0.05)).toEqual([
    { content: 'H', position: 'before_char' },
  ]);
});

it('an entry that fails its roll triggers nothing by recursion and is not tried again in a later pass', () => {
  const a = entry({ keys: ['dragon'], content: 'The dragon guards the crown.', insertion_order: 2 });
  const b = entry({
    keys: ['crown'],
    content: 'The crown was forged at Emberfall.',
    insertion_order: 1,
    extensions: { probability: 50 },
  });
  const c = entry({ keys: ['emberfall'], content: 'Emberfall is a ruin.' });
  const recursive = { recursive_scanning: true };
  // b fails its one roll: c, reached only through b, stays out.
  expect(contents(triggerEntries([book([a, b, c], recursive)], ['a dragon'], 8_000, 3, never))).toEqual([
    a.content,
  ]);
  // Rolled once per turn: a chat naming the crown rolls b in pass 0; its failure holds for the recursive passes.
  const rolls: string[] = [];
  const random = () => {
    rolls.push('b');
    return 0.9;
  };
  expect(
    contents(triggerEntries([book([a, b, c], recursive)], ['a dragon, a crown'], 8_000, 3, random)),
  ).toEqual([a.content]);
  expect(rolls).toEqual(['b']);
});

it('@depth entries (extensions.position 4) go into the history at their depth and role, not the system prompt', () => {
  const e = (depth: unknown, role: unknown, content: string) =>
    entry({ keys: ['heron'], content, extensions: { position: 4, depth, role } });
  expect(placement(e(2, 1, 'A'))).toEqual({ content: 'A', position: 'at_depth', depth: 2, role: 'user' });
  // SillyTavern's defaults: depth 4, the system role.
  expect(placement(e(undefined, undefined, 'B'))).toEqual({
    content: 'B',
    position: 'at_depth',
    depth: 4,
    role: 'system',
  });
  // extensions.position 0/1 over the V2 field (SillyTavern's reading of a card); other numbers follow the V2 field.
  expect(placement(entry({ position: 'before_char', extensions: { position: 1 } })).position).toBe(
    'after_char',
  );
  expect(placement(entry({ position: 'after_char', extensions: { position: 2 } })).position).toBe(
    'after_char',
  );
  // A World Info file's position 4 with depth and role comes through the import.
  const wi = worldInfoToBook(
    { entries: { 0: { uid: 0, key: ['heron'], content: 'H', position: 4, depth: 1, role: 2 } } },
    'Birds',
  );
  expect(triggerEntries([wi], ['heron'])).toEqual([
    { content: 'H', position: 'at_depth', depth: 1, role: 'assistant' },
  ]);

  const history: ModelMessage[] = [
    { role: 'user', content: 'm0' },
    { role: 'assistant', content: 'm1' },
    { role: 'user', content: 'm2 {{char}}' },
  ];
  const lore = [
    { content: 'sys at 1 for {{user}}', position: 'at_depth' as const, depth: 1, role: 'system' as const },
    { content: 'in the prompt', position: 'before_char' as const },
    { content: 'user at 0', position: 'at_depth' as const, depth: 0, role: 'user' as const },
    { content: 'sys at 1 again', position: 'at_depth' as const, depth: 1, role: 'system' as const },
    { content: 'far', position: 'at_depth' as const, depth: 9, role: 'assistant' as const },
  ];
  const p = { identity: { name: 'Mira', jobTitle: '', description: '' }, user: 'Ann', lore };
  expect(withLoreAtDepth(history, p, 'openai')).toEqual([
    { role: 'assistant', content: 'far' },
    history[0],
    history[1],
    { role: 'system', content: 'sys at 1 for Ann\nsys at 1 again' },
    history[2],
    { role: 'user', content: 'user at 0' },
  ]);
  // Where a Provider takes no system message mid-history, a user message that says what it is.
  expect(withLoreAtDepth(history, p, 'anthropic')[3]).toEqual({
    role: 'user',
    content: '[What you know of this world]\nsys at 1 for Ann\nsys at 1 again',
  });
});

it('an @depth entry sits exactly depth messages from the newest, the history otherwise unchanged (property)', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 15 }), (length, depth) => {
      const history: ModelMessage[] = Array.from({ length }, (_, i) => ({
        role: i % 2 ? 'assistant' : 'user',
        content: `m${i}`,
      }));
      const lore = [{ content: 'LORE', position: 'at_depth' as const, depth, role: 'user' as const }];
      const out = withLoreAtDepth(
        history,
        { identity: { name: 'N', jobTitle: '', description: '' }, lore },
        'x',
      );
      const at = out.findIndex((m) => m.content === 'LORE');
      expect(out.length).toBe(length + 1);
      expect(at).toBe(Math.max(0, length - depth));
      expect(out.filter((m) => m.content !== 'LORE')).toEqual(history);
    }),
  );
});

it('the budget bounds what enters, first by the chat then by recursion: what it leaves out triggers nothing', () => {
  // a is triggered by the chat but does not fit: c, mentioned only in a, must not come in through it.
  const a = entry({ keys: ['dragon'], content: `${'x'.repeat(400)} emberfall`, insertion_order: 9 });
  const small = entry({ keys: ['dragon'], content: 'Small.', insertion_order: 1 });
  const c = entry({ keys: ['emberfall'], content: 'Emberfall is a ruin.' });
  const b = (budget: number) => book([a, small, c], { recursive_scanning: true, token_budget: budget });
  // The first entry that does not fit ends the scan (SillyTavern: no more entries once the budget is spent).
  expect(contents(triggerEntries([b(50)], ['a dragon']))).toEqual([]);
  expect(contents(triggerEntries([b(1_000)], ['a dragon'])).sort()).toEqual(
    [a, small, c].map((e) => e.content).sort(),
  );
  // Entries the chat triggers come before those recursion does, whatever their order.
  const d = entry({ keys: ['dragon'], content: 'The dragon guards the crown.', insertion_order: 1 });
  const crown = entry({ keys: ['crown'], content: `${'c'.repeat(36)}`, insertion_order: 99 });
  const gem = entry({ keys: ['dragon'], content: `${'g'.repeat(36)}`, insertion_order: 50 });
  const small2 = book([d, crown, gem], { recursive_scanning: true, token_budget: 18 });
  expect(contents(triggerEntries([small2], ['a dragon']))).toEqual([d.content, gem.content]);
});

it('whatever the books, what enters fits the budget and was reached from the chat through entries that entered (property)', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(word, { minLength: 1, maxLength: 8 }),
      fc.array(
        fc.record({
          key: fc.nat(7),
          mentions: fc.nat(7),
          size: fc.integer({ min: 1, max: 60 }),
          order: fc.nat(20),
        }),
        { maxLength: 10 },
      ),
      fc.array(fc.nat(7), { maxLength: 3 }),
      fc.integer({ min: 1, max: 150 }),
      (words, specs, said, budget) => {
        const w = (i: number) => words[i % words.length]!;
        const entries = specs.map((s, i) =>
          entry({
            keys: [w(s.key)],
            content: `${i} ${w(s.mentions)} `.padEnd(s.size * 4, '.'),
            insertion_order: s.order,
          }),
        );
        const chat = said.map(w).join(' ');
        const out = triggerEntries(
          [book(entries, { recursive_scanning: true, token_budget: budget })],
          [chat],
        );
        const chosen = out.map((t) => entries.find((e) => e.content === t.content)!);
        expect(chosen.reduce((n, e) => n + Math.ceil(e.content.length / 4), 0)).toBeLessThanOrEqual(budget);
        // Each entered entry's key is in the chat or in the content of another entry that entered.
        const text = `${chat} ${chosen.map((e) => e.content).join(' ')}`;
        for (const e of chosen) expect(text.split(/[^a-z]+/).includes(e.keys[0]!)).toBe(true);
      },
    ),
  );
});
