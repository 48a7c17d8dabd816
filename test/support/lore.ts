import fc from 'fast-check';
import type { Lorebook, LoreEntry } from '../../src/cards/lorebook.ts';

/** A lorebook entry with the spec's defaults, as a test names only what it is about. */
export const entry = (e: Partial<LoreEntry>): LoreEntry => ({
  keys: [],
  content: 'x',
  extensions: {},
  enabled: true,
  insertion_order: 100,
  ...e,
});

export const book = (entries: LoreEntry[], more: Partial<Lorebook> = {}): Lorebook => ({
  extensions: {},
  entries,
  ...more,
});

/** A key word: lower-case letters only, so it never collides with the text around it by case or punctuation. */
export const word = fc.stringMatching(/^[a-z]{3,8}$/);
