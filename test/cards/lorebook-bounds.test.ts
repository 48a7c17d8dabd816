import fc from 'fast-check';
import { RE2JS } from 're2js';
import { afterEach, expect, it, vi } from 'vitest';
import {
  COMPILE,
  expandedSize,
  keptKeyChars,
  keyMatches,
  keyProblem,
  MIN_RUN,
  REGEX_LIMITS,
  rangeSpan,
  regexWeight,
  ScanText,
  scanBudget,
  weightOf,
} from '../../src/cards/keys.ts';
import { entryTriggered, LOREBOOK_LIMITS, readBook, triggerEntries } from '../../src/cards/lorebook.ts';
import { book, entry } from '../support/lore.ts';

// What one turn's lorebook scan may cost the event loop every Player shares, whatever a book holds (an attacker's
// review: a 200-character pattern of counted repetition compiled for 66 ms and ran for 39 s; a megabyte secondary
// key; thousands of text keys each lower-casing the whole text). Pure.
const plain = { caseSensitive: false, wholeWords: true };
afterEach(() => vi.restoreAllMocks());

it('a pattern whose repetition would build a huge program is refused before RE2 builds it', () => {
  const compile = vi.spyOn(RE2JS, 'compile');
  const huge = `/${'a{1000}'.repeat(27)}b1/`;
  expect(keyProblem(huge)).toMatch(/too large a pattern.*never matches/);
  expect(keyMatches('a'.repeat(30_000), huge, plain)).toBe(false);
  // Nested repetition multiplies: (a{20}){20} is 400 copies.
  expect(expandedSize('(?:a{20}){20}c')).toBeGreaterThanOrEqual(400);
  expect(keyProblem('/(?:a{20}){20}c/')).toMatch(/too large/);
  expect(compile).not.toHaveBeenCalled();
  // Braces that are no repetition are one atom each.
  expect(expandedSize('\\p{Greek}x{2}')).toBeLessThan(6);
  expect(expandedSize('[{]{3}')).toBe(3);
});

it('a pattern that compiles past the program bound is refused; one under it runs, weighed by its size', () => {
  // Estimated under twice the bound, measured over it once compiled.
  expect(expandedSize('[ab]{150}c')).toBeLessThanOrEqual(REGEX_LIMITS.program * 2);
  expect(keyProblem('/[ab]{150}c/')).toMatch(/too large/);
  expect(keyMatches(`${'a'.repeat(150)}c`, '/[ab]{150}c/', plain)).toBe(false);
  expect(keyProblem('/[ab]{60}c/')).toBeNull();
  expect(regexWeight('/[ab]{60}c/')).toBeGreaterThan(1);
  expect(keyMatches(`${'b'.repeat(60)}c`, '/[ab]{60}c/', plain)).toBe(true);
});

it('a heavier pattern costs its weight per character: fewer of its runs fit in one scan', () => {
  const key = '/[ab]{60}c/';
  const weight = regexWeight(key)!;
  expect(weight).toBeGreaterThan(weightOf(0));
  const window = `${'x'.repeat(REGEX_LIMITS.text - 61)}${'a'.repeat(60)}c`;
  const runs = Math.floor((REGEX_LIMITS.perScan - COMPILE) / (REGEX_LIMITS.text * weight));
  expect(runs).toBeLessThan(Math.floor((REGEX_LIMITS.perScan - COMPILE) / REGEX_LIMITS.text));
  const entries = Array.from({ length: runs + 1 }, (_, i) =>
    entry({ keys: [key], content: `E${i}`, insertion_order: i }),
  );
  const out = triggerEntries([book(entries)], [window], 1_000_000);
  expect(out.map((t) => t.content)).toEqual(entries.slice(0, runs).map((e) => e.content));
});

it('each distinct regex key costs a compile: a flood of keys over a short text stops at the bound', () => {
  const budget = scanBudget();
  let matched = 0;
  for (let i = 0; i < 1_000; i++) if (keyMatches('say k7 now', `/k${i}\\b/`, plain, budget)) matched++;
  // k7 is among the first keys; the flood runs out of budget long before its end.
  expect(matched).toBe(1);
  expect(budget.seen.size).toBeLessThanOrEqual(REGEX_LIMITS.perScan / COMPILE);
  expect(keyMatches('say k999 now', '/k999\\b/', plain, budget)).toBe(false);
  expect(keyMatches('say k999 now', '/k999\\b/', plain)).toBe(true);
});

it('secondary keys are bounded as keys are, and a book holds a bounded number of regex keys', () => {
  const one = (e: Record<string, unknown>) => readBook({ entries: [{ keys: ['a'], content: 'x', ...e }] });
  expect(() => one({ secondary_keys: Array.from({ length: 101 }, (_, i) => `k${i}`) })).toThrow(
    /more than 100/,
  );
  expect(() => one({ secondary_keys: [`/${'a'.repeat(990_000)}/`] })).toThrow(/longer than 200/);
  expect(one({ secondary_keys: ['b', '/c/'] })?.entries[0]?.secondary_keys).toEqual(['b', '/c/']);
  const regexEntries = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ keys: [`/r${i}/`], content: 'x' }));
  expect(readBook({ entries: regexEntries(LOREBOOK_LIMITS.regexKeys) })?.entries).toHaveLength(
    LOREBOOK_LIMITS.regexKeys,
  );
  expect(() => readBook({ entries: regexEntries(LOREBOOK_LIMITS.regexKeys + 1) })).toThrow(/regex\/ keys/);
});

it('a key past the bound in a book stored before keys were bounded never matches, and is not kept', () => {
  const long = `/${'a'.repeat(990_000)}/`;
  const kept = keptKeyChars();
  expect(keyProblem(long)).toMatch(/longer than 200/);
  expect(keptKeyChars()).toBeLessThan(kept + 1_000);
  const text = `${'a'.repeat(1_000)} dragon`;
  const e = entry({ keys: ['dragon'], selective: true, secondary_keys: [long, 'x'.repeat(201)] });
  // Neither secondary key can match: with none usable, the entry stands on its primary key.
  expect(entryTriggered(e, text)).toBe(true);
  expect(entryTriggered({ ...e, keys: ['x'.repeat(201)] }, 'x'.repeat(201))).toBe(false);
});

it('text keys of more than one word search the text, and one scan’s searches are bounded', () => {
  const text = `${'lorem ipsum '.repeat(Math.ceil(REGEX_LIMITS.textPerScan / 120 / 12))}a magical forest`;
  const searches = Math.floor(REGEX_LIMITS.textPerScan / text.length);
  expect(searches).toBeGreaterThan(5);
  const entries = Array.from({ length: searches + 1 }, (_, i) =>
    entry({ keys: ['magical forest'], content: `E${i}`, insertion_order: i }),
  );
  const out = triggerEntries([book(entries)], [text], 1_000_000);
  expect(out).toHaveLength(searches);
  // One-word keys are lookups: as many as there are entries, however long the text.
  const words = entries.map((e) => ({ ...e, keys: ['forest'] }));
  expect(triggerEntries([book(words)], [text], 1_000_000)).toHaveLength(searches + 1);
});

/** The text-key match as it was before the scan read its words once: the oracle for the lookup. */
function oracle(text: string, key: string, o: { caseSensitive: boolean; wholeWords: boolean }) {
  const k = o.caseSensitive ? key.trim() : key.trim().toLowerCase();
  if (!k) return false;
  const t = o.caseSensitive ? text : text.toLowerCase();
  if (!o.wholeWords || !/^\w/u.test(k) || !/\w$/u.test(k)) return t.includes(k);
  const escaped = k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\p{L}\\p{N}_])${escaped}(?![\\p{L}\\p{N}_])`, 'u').test(t);
}

it('a text key matches as it did when each key searched the text itself (property)', () => {
  // Letters with case, Greek sigma (final and not), an accent, digits, underscore, spaces and punctuation.
  const char = fc.constantFrom(...'aAbBzZéÉσΣς1_ .-#\n'.split(''), 'ab', 'Ab', '😀', '𝒜', 'a b', '\uD835');
  const text = fc.array(char, { maxLength: 40 }).map((xs) => xs.join(''));
  const key = fc.array(char, { minLength: 1, maxLength: 5 }).map((xs) => xs.join(''));
  fc.assert(
    fc.property(text, fc.array(key, { maxLength: 6 }), fc.boolean(), fc.boolean(), (t, keys, cs, ww) => {
      const o = { caseSensitive: cs, wholeWords: ww };
      const scan = new ScanText(t);
      // Taken from the text too, so that some keys are in it.
      for (const k of [...keys, t.slice(0, 3), t.slice(2, 7)])
        expect(keyMatches(scan, k, o), JSON.stringify({ t, k, o })).toBe(oracle(t, k, o));
    }),
    { numRuns: 2_000 },
  );
});

it('a pattern that ignores case may not span wide ranges: RE2 folds each code point (one took 1.5 s)', () => {
  const compile = vi.spyOn(RE2JS, 'compile');
  const wide = `/[${'B-\u{1E942}'.repeat(48)}]/i`;
  expect(keyProblem(wide)).toMatch(/too wide a range/);
  expect(keyProblem('/(?i)[B-\u{1E942}]/')).toMatch(/too wide a range/);
  expect(keyMatches('b', '/[\\x{42}-\\x{1E942}]/i', plain)).toBe(false);
  expect(compile).not.toHaveBeenCalled();
  // The same range with case kept runs; a narrow one ignoring case runs.
  expect(keyProblem('/[B-\u{1E942}]/')).toBeNull();
  expect(keyMatches('THE ДРАКОН', '/[a-zа-я]{5}/i', plain)).toBe(true);
  expect(rangeSpan('[a-zа-я]')).toBe(25 + 31);
  // Read as RE2 reads a class: a POSIX class inside does not end it, quoting is refused, an emoji is one point.
  compile.mockClear();
  expect(keyProblem(`/[[:alpha:]${'B-\u{1E942}'.repeat(20)}]/i`)).toMatch(/too wide a range/);
  expect(keyProblem(`/\\Q[\\E[]${'B-\u{1E942}'.repeat(20)}]/i`)).toMatch(/too wide a range/);
  expect(compile).not.toHaveBeenCalled();
  expect(rangeSpan('[😀-🙏]')).toBe(0x1f64f - 0x1f600);
  expect(keyMatches('I 🙂 it', '/[😀-🙏]/i', plain)).toBe(true);
});

it('one scan tries a bounded number of keys, of every kind', () => {
  const budget = scanBudget();
  let tried = 0;
  for (let i = 0; i < REGEX_LIMITS.keysPerScan + 10; i++)
    if (keyMatches('a dragon', 'dragon', plain, budget)) tried++;
  expect(tried).toBe(REGEX_LIMITS.keysPerScan);
  expect(keyMatches('a dragon', 'dragon', plain, budget)).toBe(false);
});

it('what RE2 cannot run is said in words, never in its own', () => {
  for (const k of ['/\\p{Cyrillic}+/i', '/(a)\\1/']) {
    const problem = keyProblem(k);
    expect(problem).toMatch(/not a pattern this app runs safely/);
    expect(problem).not.toMatch(/undefined|Cannot read|TypeError/);
  }
});

it('each place a phrase is found inside words costs the scan too', () => {
  const budget = scanBudget();
  const text = 'xa bx '.repeat(1_000);
  expect(keyMatches(text, 'a b', plain, budget)).toBe(false);
  expect(REGEX_LIMITS.textPerScan - budget.text).toBe(text.length + 1_000 * MIN_RUN);
  expect(keyMatches(`${text}a b`, 'a b', plain)).toBe(true);
});
