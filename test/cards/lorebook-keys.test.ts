import fc from 'fast-check';
import { expect, it } from 'vitest';
import {
  COMPILE,
  isRegexKey,
  keyMatches,
  keyProblem,
  REGEX_LIMITS,
  regexWeight,
} from '../../src/cards/keys.ts';
import { entryTriggered, triggerEntries, worldInfoToBook } from '../../src/cards/lorebook.ts';
import { book, entry, word } from '../support/lore.ts';

// Lorebook keys as SillyTavern defines them: `/regex/flags` keys (run with RE2, bounded), case and whole words per
// entry, and recursive scanning (bounded, with prevent/exclude/delay recursion). Pure.
const plain = { caseSensitive: false, wholeWords: true };

it('a /regex/flags key matches by its pattern and flags, not by the entry’s case or whole-word settings', () => {
  expect(isRegexKey('/drag(on|ons)/i')).toBe(true);
  expect(isRegexKey('/a/b/')).toBe(false); // an unescaped slash inside: text, as SillyTavern reads it
  expect(isRegexKey('and/or')).toBe(false);
  expect(entryTriggered(entry({ keys: ['/drag(on|ons)/i'] }), 'THE DRAGONS!')).toBe(true);
  // No `i`: case counts even though the entry is not case-sensitive.
  expect(entryTriggered(entry({ keys: ['/Drag/'] }), 'a drag')).toBe(false);
  // A regex finds inside words even though whole words are on for text keys.
  expect(entryTriggered(entry({ keys: ['/wood/'] }), 'the woodland')).toBe(true);
  expect(entryTriggered(entry({ keys: ['wood'] }), 'the woodland')).toBe(false);
  // Escaped slashes are slashes; `s` and `m` flags as in JavaScript.
  expect(keyMatches('and/or', '/d\\/o/', plain)).toBe(true);
  expect(keyMatches('a\nb', '/a.b/s', plain)).toBe(true);
  expect(keyMatches('a\nb', '/a.b/', plain)).toBe(false);
  expect(keyMatches('x\nb', '/^b$/m', plain)).toBe(true);
  // Secondary keys may be regexes too.
  const e = entry({ keys: ['ledger'], selective: true, secondary_keys: ['/cry?pt/'] });
  expect(entryTriggered(e, 'the ledger in the crypt')).toBe(true);
  expect(entryTriggered(e, 'the ledger in the attic')).toBe(false);
});

it('a regex key of whole-word letters behaves as the text key does (property)', () => {
  fc.assert(
    fc.property(word, fc.array(word, { maxLength: 10 }), fc.boolean(), (key, words, upper) => {
      const text = upper ? words.join(' ').toUpperCase() : words.join(' ');
      const expected = words.includes(key);
      expect(keyMatches(text, `/\\b${key}\\b/i`, plain)).toBe(expected);
      expect(keyMatches(text, key, plain)).toBe(expected);
      // Without `i`, only the lower-case text matches.
      expect(keyMatches(text, `/\\b${key}\\b/`, plain)).toBe(expected && !upper);
    }),
  );
});

it('catastrophic patterns run in bounded time; what RE2 cannot run, or too long a pattern, never matches and says why', () => {
  const evil = `${'a'.repeat(50_000)}!`;
  const started = performance.now();
  for (const k of ['/(a+)+$/', '/^(a|aa)*$/', '/(a*)*b/', '/(?:a|a)*c/'])
    expect(keyMatches(evil, k, plain)).toBe(false);
  expect(performance.now() - started).toBeLessThan(2_000);
  for (const k of ['/(a)\\1/', '/(?<=a)b/', '/a(?!b)/', `/${'a'.repeat(REGEX_LIMITS.pattern + 1)}/`]) {
    expect(keyProblem(k)).toMatch(/never matches/);
    expect(keyMatches('aa ab ac', k, plain)).toBe(false);
  }
  expect(keyProblem('/a+/')).toBeNull();
  expect(keyProblem('plain words')).toBeNull();
  // Only the newest REGEX_LIMITS.text characters are seen by a regex.
  expect(keyMatches(`needle${'.'.repeat(REGEX_LIMITS.text)}`, '/needle/', plain)).toBe(false);
  expect(keyMatches(`${'.'.repeat(REGEX_LIMITS.text)}needle`, '/needle/', plain)).toBe(true);
});

it('case sensitivity and whole words are per entry (the V2 field, or SillyTavern’s extensions)', () => {
  const text = 'The Abbey of the Woodland';
  expect(entryTriggered(entry({ keys: ['abbey'] }), text)).toBe(true);
  expect(entryTriggered(entry({ keys: ['abbey'], case_sensitive: true }), text)).toBe(false);
  expect(entryTriggered(entry({ keys: ['abbey'], extensions: { case_sensitive: true } }), text)).toBe(false);
  expect(entryTriggered(entry({ keys: ['Abbey'], extensions: { case_sensitive: true } }), text)).toBe(true);
  expect(entryTriggered(entry({ keys: ['wood'], extensions: { match_whole_words: false } }), text)).toBe(
    true,
  );
  expect(entryTriggered(entry({ keys: ['wood'] }), text)).toBe(false);
});

const contents = (out: { content: string }[]) => out.map((t) => t.content).sort();

it('recursive scanning: a triggered entry’s content triggers others, only in recursive books', () => {
  const a = entry({ keys: ['dragon'], content: 'The dragon guards the ember crown.' });
  const b = entry({ keys: ['crown'], content: 'The crown was forged at Emberfall.' });
  const c = entry({ keys: ['emberfall'], content: 'Emberfall is a ruined city.' });
  const chat = ['I saw a dragon'];
  expect(contents(triggerEntries([book([a, b, c])], chat))).toEqual([a.content]);
  expect(contents(triggerEntries([book([a, b, c], { recursive_scanning: true })], chat))).toEqual(
    [a, b, c].map((e) => e.content).sort(),
  );
  // The depth bound: one recursive pass reaches b, not c.
  expect(contents(triggerEntries([book([a, b, c], { recursive_scanning: true })], chat, 8_000, 1))).toEqual(
    [a, b].map((e) => e.content).sort(),
  );
  // prevent_recursion: a's content triggers nothing.
  const aStop = { ...a, extensions: { prevent_recursion: true } };
  expect(contents(triggerEntries([book([aStop, b, c], { recursive_scanning: true })], chat))).toEqual([
    a.content,
  ]);
  // exclude_recursion: b can be triggered by the chat only.
  const bExcl = { ...b, extensions: { exclude_recursion: true } };
  expect(contents(triggerEntries([book([a, bExcl, c], { recursive_scanning: true })], chat))).toEqual([
    a.content,
  ]);
  expect(
    contents(triggerEntries([book([a, bExcl, c], { recursive_scanning: true })], ['a dragon and a crown'])),
  ).toEqual([a, bExcl, c].map((e) => e.content).sort());
  // delay_until_recursion: c only from another entry's content, never from the chat alone.
  const cDelay = { ...c, extensions: { delay_until_recursion: true } };
  expect(contents(triggerEntries([book([cDelay])], ['emberfall']))).toEqual([]);
  expect(
    contents(triggerEntries([book([a, b, cDelay], { recursive_scanning: true })], ['emberfall dragon'])),
  ).toEqual([a, b, cDelay].map((e) => e.content).sort());
});

it('a chain of entries is followed exactly as deep as the bound allows, and recursion only adds (property)', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(word, { minLength: 1, maxLength: 8 }),
      fc.integer({ min: 0, max: 6 }),
      fc.boolean(),
      (keys, depth, recursive) => {
        // Entry i is keyed by keys[i] and mentions keys[i+1]: the chat names only keys[0].
        const entries = keys.map((k, i) =>
          entry({ keys: [k], content: `${i} ${keys[i + 1] ?? '.'}`, insertion_order: i }),
        );
        const out = triggerEntries(
          [book(entries, { recursive_scanning: recursive })],
          [keys[0]!],
          8_000,
          depth,
        );
        const reached = recursive ? Math.min(keys.length, depth + 1) : 1;
        expect(out.map((t) => t.content)).toEqual(entries.slice(0, reached).map((e) => e.content));
      },
    ),
  );
});

it('a World Info file’s own names for these options (matchWholeWords, preventRecursion…) are honoured', () => {
  const b = worldInfoToBook(
    {
      entries: {
        '0': { uid: 0, key: ['dragon'], content: 'The crown.', preventRecursion: true },
        '1': { uid: 1, key: ['crown'], content: 'C', excludeRecursion: false },
        '2': { uid: 2, key: ['wood'], content: 'W', matchWholeWords: false, caseSensitive: true },
      },
    },
    'W',
  );
  expect(b.entries.map((e) => e.extensions)).toEqual([
    { prevent_recursion: true, position: 0 },
    { exclude_recursion: false, position: 0 },
    { match_whole_words: false, position: 0 },
  ]);
  const recursive = { ...b, recursive_scanning: true };
  expect(contents(triggerEntries([recursive], ['a dragon']))).toEqual(['The crown.']);
  // Not whole words: inside "woodland"; case-sensitive: not in "Woodland".
  expect(contents(triggerEntries([recursive], ['woodland']))).toEqual(['W']);
  expect(contents(triggerEntries([recursive], ['Woodland']))).toEqual([]);
});

it('one scan’s regex keys together spend a bounded amount of work; past it they do not match', () => {
  const window = `${'x'.repeat(REGEX_LIMITS.text - 6)} heron`;
  // One key, so one compile: then each run costs its window times its weight (1 for a pattern this small).
  expect(regexWeight('/heron/')).toBe(1);
  const keys = Math.floor((REGEX_LIMITS.perScan - COMPILE) / REGEX_LIMITS.text);
  // As many regex-keyed entries as the scan may run, and one more: the last is not run.
  const entries = Array.from({ length: keys + 1 }, (_, i) =>
    entry({ keys: ['/heron/'], content: `E${i}`, insertion_order: i }),
  );
  const out = triggerEntries([book(entries)], [window], 1_000_000);
  expect(out.map((t) => t.content)).toEqual(entries.slice(0, keys).map((e) => e.content));
  // One-word text keys are looked up in the scan's words: not counted.
  const plainEntries = entries.map((e) => ({ ...e, keys: ['heron'] }));
  expect(triggerEntries([book(plainEntries)], [window], 1_000_000)).toHaveLength(keys + 1);
});
