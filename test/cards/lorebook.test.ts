import fc from 'fast-check';
import { expect, it } from 'vitest';
import { entryTriggered, type Lorebook, triggerEntries, worldInfoToBook } from '../../src/cards/lorebook.ts';
import { expandMacros, unknownMacros } from '../../src/macros/index.ts';
import { book, entry, word } from '../support/lore.ts';

// Lorebooks as the V2 spec (and SillyTavern) trigger them: keys in the recent window, secondary keys with
// selective logic, constant entries, case sensitivity, scan depth, insertion order and a token budget. Pure.

it('an entry is triggered exactly when one of its keys is in the window (whole words, any case)', () => {
  fc.assert(
    fc.property(
      fc.array(word, { minLength: 1, maxLength: 3 }),
      fc.array(word, { maxLength: 12 }),
      (keys, words) => {
        const text = words.join(' ');
        const expected = keys.some((k) => words.includes(k));
        expect(entryTriggered(entry({ keys }), text)).toBe(expected);
        expect(entryTriggered(entry({ keys }), text.toUpperCase())).toBe(expected);
        // Case-sensitive: the upper-cased window no longer matches lower-case keys.
        expect(entryTriggered(entry({ keys, case_sensitive: true }), text.toUpperCase())).toBe(false);
        // Disabled: never; constant: always.
        expect(entryTriggered(entry({ keys, enabled: false, constant: true }), text)).toBe(false);
        expect(entryTriggered(entry({ keys, constant: true }), '')).toBe(true);
      },
    ),
  );
  expect(entryTriggered(entry({ keys: ['wood'] }), 'the woodland')).toBe(false);
  expect(
    entryTriggered(entry({ keys: ['wood'], extensions: { match_whole_words: false } }), 'woodland'),
  ).toBe(true);
  expect(
    entryTriggered(entry({ keys: ['magical forest'] }), 'A Magical  forest? no; a magical forest!'),
  ).toBe(true);
});

it('selective entries combine secondary keys by their logic (AND ANY, NOT ALL, NOT ANY, AND ALL)', () => {
  fc.assert(
    fc.property(
      word,
      fc.array(word, { minLength: 1, maxLength: 3 }),
      fc.array(word, { maxLength: 8 }),
      fc.integer({ min: 0, max: 3 }),
      (key, secondary, words, logic) => {
        const text = [key, ...words].join(' ');
        const hits = secondary.map((k) => [key, ...words].includes(k));
        const e = entry({
          keys: [key],
          selective: true,
          secondary_keys: secondary,
          extensions: { selectiveLogic: logic },
        });
        const expected = [hits.some(Boolean), !hits.every(Boolean), !hits.some(Boolean), hits.every(Boolean)][
          logic
        ];
        expect(entryTriggered(e, text)).toBe(expected);
        // Not selective: the secondary keys do not matter.
        expect(entryTriggered({ ...e, selective: false }, text)).toBe(true);
      },
    ),
  );
});

it('only triggered entries go in, within the budget, highest priority kept, then in insertion order', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          key: word,
          order: fc.integer({ min: 0, max: 50 }),
          size: fc.integer({ min: 1, max: 400 }),
          constant: fc.boolean(),
          after: fc.boolean(),
        }),
        { maxLength: 10 },
      ),
      fc.array(word, { maxLength: 10 }),
      fc.integer({ min: 1, max: 500 }),
      (specs, words, budget) => {
        const entries = specs.map((s, i) =>
          entry({
            keys: [s.key],
            insertion_order: s.order,
            constant: s.constant,
            content: `${i}:`.padEnd(s.size * 4, '.'),
            position: s.after ? 'after_char' : 'before_char',
          }),
        );
        const out = triggerEntries([book(entries, { token_budget: budget })], [words.join(' ')]);
        const text = words.join(' ');
        const chosen = out.map((t) => entries.find((e) => e.content === t.content)!);
        // Only triggered ones, never over budget.
        for (const e of chosen) expect(entryTriggered(e, text)).toBe(true);
        expect(chosen.reduce((n, e) => n + Math.ceil(e.content.length / 4), 0)).toBeLessThanOrEqual(budget);
        // Ordered: before_char first, then by insertion order.
        const keys = chosen.map((e) => [e.position === 'after_char' ? 1 : 0, e.insertion_order!]);
        expect(keys).toEqual([...keys].sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!));
      },
    ),
  );
});

it('each book scans its own depth of recent messages', () => {
  const b = book([entry({ keys: ['heron'], content: 'H' })], { scan_depth: 1 });
  expect(triggerEntries([b], ['a heron', 'nothing'])).toEqual([]);
  expect(triggerEntries([{ ...b, scan_depth: 2 }], ['a heron', 'nothing'])).toEqual([
    { content: 'H', position: 'before_char' },
  ]);
  // SillyTavern's default depth: the last two.
  const { scan_depth: _, ...deflt } = b;
  expect(triggerEntries([deflt as Lorebook], ['a heron', 'x', 'y'])).toEqual([]);
});

it('a World Info file converts as SillyTavern converts it for a card', () => {
  const b = worldInfoToBook(
    {
      entries: {
        '0': {
          uid: 0,
          key: ['ledger'],
          keysecondary: ['crypt'],
          comment: 'c',
          content: 'L',
          constant: false,
          selective: true,
          selectiveLogic: 3,
          order: 7,
          position: 1,
          disable: true,
          depth: 4,
        },
      },
    },
    'Abbey',
  );
  expect(b).toEqual({
    name: 'Abbey',
    extensions: {},
    entries: [
      {
        id: 0,
        keys: ['ledger'],
        secondary_keys: ['crypt'],
        comment: 'c',
        content: 'L',
        constant: false,
        selective: true,
        insertion_order: 7,
        enabled: false,
        position: 'after_char',
        extensions: { selectiveLogic: 3, depth: 4, position: 1 },
      },
    ],
  });
});

it('macros: {{char}}, {{user}}, <BOT>, <USER> in one pass; {{original}} only where allowed; unknown ones out and reported', () => {
  fc.assert(
    fc.property(fc.string(), fc.string(), (char, user) => {
      const r = expandMacros('{{char}}/{{USER}}/<BOT>/<user>', { char, user });
      expect(r.text).toBe(`${char}/${user}/${char}/${user}`);
    }),
  );
  expect(expandMacros('a {{original}} b', { char: 'C', user: 'U', original: 'O' }).text).toBe('a O b');
  expect(expandMacros('a {{original}} b', { char: 'C', user: 'U' })).toEqual({
    text: 'a  b',
    unknown: ['{{original}}'],
  });
  expect(expandMacros('{{random::a::b}} {{// note}}{{noop}}x', { char: 'C', user: 'U' })).toEqual({
    text: ' x',
    unknown: ['{{random::a::b}}'],
  });
  // A name that reads like a macro is not expanded again.
  expect(expandMacros('{{char}}', { char: '{{user}}', user: 'U' }).text).toBe('{{user}}');
  expect(unknownMacros('{{char}} {{time}}')).toEqual(['{{time}}']);
});
