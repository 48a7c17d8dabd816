import { isRegexKey, keyMatches, type ScanBudget, ScanText, scanBudget } from './keys.ts';

/**
 * Lorebooks (a card's `character_book`, or a SillyTavern World Info file) kept as the Character Card V2 spec
 * shapes them, so an export gives back what came in. Pure: reading a book from JSON (bounded), and which entries
 * a turn's recent messages trigger (see `triggerEntries`).
 */

/** A V2 lorebook entry as this app reads it; every other key of the entry is kept as it came. */
export interface LoreEntry {
  keys: string[];
  content: string;
  extensions?: Record<string, unknown>;
  enabled?: boolean;
  insertion_order?: number;
  case_sensitive?: boolean;
  name?: string;
  priority?: number;
  id?: number | string;
  comment?: string;
  selective?: boolean;
  secondary_keys?: string[];
  constant?: boolean;
  position?: 'before_char' | 'after_char';
  [other: string]: unknown;
}

export interface Lorebook {
  name?: string;
  description?: string;
  scan_depth?: number;
  token_budget?: number;
  recursive_scanning?: boolean;
  extensions?: Record<string, unknown>;
  entries: LoreEntry[];
  [other: string]: unknown;
}

export const LOREBOOK_LIMITS = {
  entries: 500,
  /** Of an entry: its keys, and (apart) its secondary keys. */
  keys: 100,
  key: 200,
  /** Of the whole book, primary and secondary: each is compiled, and a book's editor checks them all. */
  regexKeys: 200,
  content: 20_000,
  /** The whole book as JSON: a few hundred entries of a few KB each. */
  bytes: 2_000_000,
};

export class LorebookError extends Error {}

const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/**
 * A `character_book` as found in a card, its entries made well-typed where they are not (a key list of strings,
 * a string content, an extensions object) and every other field left as it came. Over LOREBOOK_LIMITS: refused.
 */
export function readBook(raw: unknown): Lorebook | null {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const book = raw as Record<string, unknown>;
  const list = Array.isArray(book.entries) ? book.entries : [];
  if (list.length > LOREBOOK_LIMITS.entries)
    throw new LorebookError(
      `The lorebook has ${list.length} entries; a lorebook holds ${LOREBOOK_LIMITS.entries}.`,
    );
  const entries = list
    .filter((e) => e && typeof e === 'object' && !Array.isArray(e))
    .map((e, i): LoreEntry => {
      const o = e as Record<string, unknown>;
      // Only what is there is made well-typed: a key the card left out stays out, so the export matches it.
      const entry: LoreEntry = {
        ...o,
        keys: strings(o.keys),
        content: typeof o.content === 'string' ? o.content : '',
      };
      if ('extensions' in o) entry.extensions = obj(o.extensions);
      if ('enabled' in o) entry.enabled = o.enabled !== false;
      if ('insertion_order' in o) entry.insertion_order = num(o.insertion_order) ?? i;
      if ('secondary_keys' in o) entry.secondary_keys = strings(o.secondary_keys);
      for (const list of [entry.keys, entry.secondary_keys ?? []])
        if (list.length > LOREBOOK_LIMITS.keys || list.some((k) => k.length > LOREBOOK_LIMITS.key))
          throw new LorebookError(
            `A lorebook entry has more than ${LOREBOOK_LIMITS.keys} keys (or secondary keys), or a key longer than ${LOREBOOK_LIMITS.key} characters.`,
          );
      if (entry.content.length > LOREBOOK_LIMITS.content)
        throw new LorebookError(
          `A lorebook entry is ${entry.content.length.toLocaleString('en')} characters; an entry holds ${LOREBOOK_LIMITS.content.toLocaleString('en')}.`,
        );
      return entry;
    });
  const regexKeys = regexKeysOf(entries).length;
  if (regexKeys > LOREBOOK_LIMITS.regexKeys)
    throw new LorebookError(
      `The lorebook has ${regexKeys} /regex/ keys; a lorebook holds ${LOREBOOK_LIMITS.regexKeys}.`,
    );
  const out: Lorebook = { ...book, entries };
  if ('extensions' in book) out.extensions = obj(book.extensions);
  if (JSON.stringify(out).length > LOREBOOK_LIMITS.bytes)
    throw new LorebookError('The lorebook is larger than 2 MB.');
  return out;
}

/** Whether a JSON value is a SillyTavern World Info file: `entries` an object of entries keyed by number. */
export function isWorldInfo(v: unknown): boolean {
  const o = obj(v);
  return (
    typeof o.name !== 'string' &&
    !o.spec &&
    !!o.entries &&
    typeof o.entries === 'object' &&
    !Array.isArray(o.entries)
  );
}

/** SillyTavern's World Info `selectiveLogic`: how secondary keys combine with the primary ones. */
const LOGIC = ['AND_ANY', 'NOT_ALL', 'NOT_ANY', 'AND_ALL'] as const;

/**
 * A World Info file as a V2 lorebook, the way SillyTavern converts one for a card (its `convertWorldInfoToCharacterBook`):
 * `key`→`keys`, `keysecondary`→`secondary_keys`, `order`→`insertion_order`, `disable`→`!enabled`, `position`
 * 0/1→before/after_char, `matchWholeWords`/`excludeRecursion`/`preventRecursion`/`delayUntilRecursion` → their
 * snake_case names; the rest (`selectiveLogic`, `depth`, `probability`, …) goes under the entry's extensions.
 */
export function worldInfoToBook(wi: unknown, name: string): Lorebook {
  const entries = Object.values(obj(obj(wi).entries)).map((e, i) => {
    const o = obj(e);
    const {
      uid,
      key,
      keysecondary,
      comment,
      content,
      constant,
      selective,
      order,
      position,
      disable,
      caseSensitive,
      matchWholeWords,
      excludeRecursion,
      preventRecursion,
      delayUntilRecursion,
      ...rest
    } = o;
    // SillyTavern's own names for these under a card's entry extensions (only those the file sets).
    const named = Object.fromEntries(
      (
        [
          ['match_whole_words', matchWholeWords],
          ['exclude_recursion', excludeRecursion],
          ['prevent_recursion', preventRecursion],
          ['delay_until_recursion', delayUntilRecursion],
        ] as const
      ).filter(([, v]) => typeof v === 'boolean'),
    );
    return {
      id: num(uid) ?? i,
      keys: strings(key),
      secondary_keys: strings(keysecondary),
      comment: typeof comment === 'string' ? comment : '',
      content: typeof content === 'string' ? content : '',
      constant: constant === true,
      selective: selective === true,
      insertion_order: num(order) ?? 100,
      enabled: disable !== true,
      position: position === 1 ? 'after_char' : 'before_char',
      case_sensitive: caseSensitive === true ? true : undefined,
      extensions: { ...rest, ...named, position: num(position) ?? 0 },
    };
  });
  return readBook({ name, entries, extensions: {} })!;
}

/** Where a triggered entry goes: the system prompt (before or after the character), or into the history. */
export type Triggered =
  | { content: string; position: 'before_char' | 'after_char' }
  | {
      content: string;
      position: 'at_depth';
      /** Messages from the newest: 0 after it, 1 just before it, and so on. */
      depth: number;
      role: LoreRole;
    };
export type LoreRole = 'system' | 'user' | 'assistant';

/** SillyTavern's `world_info_position.atDepth`, as its cards carry it in `extensions.position`. */
const AT_DEPTH = 4;
/** SillyTavern's default depth for an @depth entry (`DEFAULT_DEPTH`). */
const DEFAULT_DEPTH = 4;
/** SillyTavern's `extension_prompt_roles`: 0 system, 1 user, 2 assistant. */
const ROLES: readonly LoreRole[] = ['system', 'user', 'assistant'];

/**
 * Where an entry goes, as SillyTavern reads a card's entry: `extensions.position` (its World Info number) when it
 * is 0 (before the character), 1 (after) or 4 (@depth: `extensions.depth` messages from the newest, default 4, as
 * `extensions.role`'s message, default system); else the V2 `position`. SillyTavern's other places (around the
 * Author's Note or the example messages) have no counterpart here and follow the V2 field. Pure.
 */
export function placement(e: LoreEntry): Triggered {
  const ext = e.extensions ?? {};
  const at = num(ext.position);
  if (at === AT_DEPTH) {
    const depth = Math.max(0, Math.min(1000, Math.floor(num(ext.depth) ?? DEFAULT_DEPTH)));
    return { content: e.content, position: 'at_depth', depth, role: ROLES[num(ext.role) ?? 0] ?? 'system' };
  }
  if (at === 0 || at === 1) return { content: e.content, position: at === 1 ? 'after_char' : 'before_char' };
  return { content: e.content, position: e.position === 'after_char' ? 'after_char' : 'before_char' };
}

/**
 * Whether an activated entry passes its roll, as SillyTavern's `verifyProbability`: with `useProbability` (on
 * unless false, SillyTavern's default when it reads a card) and a `probability` under 100 (percent, default 100),
 * it goes in when `random() * 100 <= probability`. Read from the entry's extensions (where SillyTavern's cards
 * and our World Info import put them), else the entry itself. `random` is injected so tests can decide it.
 */
export function passesRoll(e: LoreEntry, random: () => number): boolean {
  const ext = e.extensions ?? {};
  const use = ext.useProbability ?? e.useProbability;
  const probability = num(ext.probability) ?? num(e.probability) ?? 100;
  if (use === false || probability >= 100) return true;
  return random() * 100 <= probability;
}

/** Whether one enabled entry is triggered by `text` (the V2 spec, with SillyTavern's selective logic). Case and
 *  whole words are the entry's (`case_sensitive`, else `extensions.case_sensitive`; `extensions.match_whole_words`,
 *  on unless false); a `/regex/flags` key follows its own flags (src/cards/keys.ts). */
export function entryTriggered(
  e: LoreEntry,
  text: string | ScanText,
  budget: ScanBudget = scanBudget(),
): boolean {
  if (e.enabled === false) return false;
  if (e.constant === true) return true;
  const ext = e.extensions ?? {};
  const o = {
    caseSensitive: (e.case_sensitive ?? ext.case_sensitive) === true,
    wholeWords: ext.match_whole_words !== false,
  };
  const scan = typeof text === 'string' ? new ScanText(text) : text;
  // A key past the bound (in a book stored before secondary keys were bounded) never matches.
  const usable = (keys: string[]) => keys.filter((k) => k.trim() && k.length <= LOREBOOK_LIMITS.key);
  if (!usable(e.keys).some((k) => keyMatches(scan, k, o, budget))) return false;
  const secondary = usable(e.secondary_keys ?? []);
  if (e.selective !== true || secondary.length === 0) return true;
  const hits = secondary.map((k) => keyMatches(scan, k, o, budget));
  const logic = LOGIC[num(ext.selectiveLogic) ?? 0] ?? 'AND_ANY';
  if (logic === 'AND_ANY') return hits.some(Boolean);
  if (logic === 'AND_ALL') return hits.every(Boolean);
  if (logic === 'NOT_ANY') return !hits.some(Boolean);
  return !hits.every(Boolean); // NOT_ALL
}

/** SillyTavern's default: the last two messages are scanned for keys. */
export const DEFAULT_SCAN_DEPTH = 2;
/** Lore a turn may carry when a book names no budget of its own. */
export const DEFAULT_LORE_BUDGET = 2_000;
/** Passes of recursive scanning after the first (SillyTavern's is unbounded but for the budget; ours is not). */
export const MAX_RECURSION = 3;

type Candidate = { e: LoreEntry; book: number; order: number; chat: string; recursive: boolean };

/** Tokens as the History budget counts them (seed 003: four characters a token). */
const tokens = (s: string) => Math.ceil(s.length / 4);

/**
 * Which entries enter, as SillyTavern's `checkWorldInfo` decides: pass 0 scans each book's window of the chat;
 * the entries it activates are taken constant first, then by priority (else insertion order), highest first; each
 * rolls its probability (one that fails is out for the turn, recursion included) and goes in while the budget
 * holds — the first that does not fit ends the scan, no recursion after it ("if the budget is exhausted, no more
 * entries are activated"). Then, for books with `recursive_scanning`, the content of what went in (never of what
 * the budget or the roll left out) is scanned too, pass after pass (at most `maxRecursion` more), its entries
 * after all of the chat's. So the budget bounds recursion as well as the prompt. An entry's
 * `extensions.prevent_recursion` keeps its content from triggering others, `exclude_recursion` lets only the chat
 * trigger it, `delay_until_recursion` only a recursive pass.
 */
function enteredEntries(
  all: Candidate[],
  budget: number,
  maxRecursion: number,
  random: () => number,
): Candidate[] {
  const seen = new Set<Candidate>();
  const entered: Candidate[] = [];
  const work = scanBudget();
  const rank = (x: Candidate) => num(x.e.priority) ?? x.order;
  let buffer = '';
  let used = 0;
  for (let pass = 0; pass <= maxRecursion; pass++) {
    // Each distinct text of the pass read once (its lower case, its words), whatever number of entries scan it.
    const texts = new Map<string, ScanText>();
    const textOf = (chat: string) => {
      let t = texts.get(chat);
      if (!t) {
        t = new ScanText(pass === 0 ? chat : `${chat}\n${buffer}`);
        texts.set(chat, t);
      }
      return t;
    };
    const fresh = all.filter((x) => {
      if (seen.has(x)) return false;
      const ext = x.e.extensions ?? {};
      if (pass === 0 && ext.delay_until_recursion === true && x.e.constant !== true) return false;
      // Excluded from recursion: the chat alone decides, and pass 0 already read it.
      if (pass > 0 && ext.exclude_recursion === true) return false;
      return entryTriggered(x.e, textOf(x.chat), work);
    });
    fresh.sort((a, b) => Number(b.e.constant === true) - Number(a.e.constant === true) || rank(b) - rank(a));
    const now: Candidate[] = [];
    let overflowed = false;
    for (const x of fresh) {
      seen.add(x);
      if (!passesRoll(x.e, random)) continue;
      const cost = tokens(x.e.content);
      if (used + cost > budget) {
        overflowed = true;
        break;
      }
      used += cost;
      now.push(x);
    }
    entered.push(...now);
    if (overflowed) break;
    const more = now
      .filter((x) => x.recursive && x.e.extensions?.prevent_recursion !== true)
      .map((x) => x.e.content);
    if (more.length === 0) break;
    // Bounded by the budget: only what went in is here.
    buffer = `${buffer}\n${more.join('\n')}`;
  }
  return entered;
}

/**
 * The entries of `books` that `recent` (the turn's messages, oldest first) triggers, within a token budget
 * (`token_budget` of the first book that sets one, else DEFAULT_LORE_BUDGET, never over `maxBudget`), chosen as
 * `enteredEntries` says. Each book scans its own depth of messages (`scan_depth`, else the last two). What went
 * in is put in insertion order, lowest first, `before_char` entries before `after_char` ones and @depth entries
 * (see `placement`); `random` rolls entries' probability. Pure but for `random`.
 */
export function triggerEntries(
  books: readonly Lorebook[],
  recent: readonly string[],
  maxBudget = 8_000,
  maxRecursion = MAX_RECURSION,
  random: () => number = Math.random,
): Triggered[] {
  const all: Candidate[] = books.flatMap((b, book) => {
    const depth = Math.max(0, Math.min(1000, num(b.scan_depth) ?? DEFAULT_SCAN_DEPTH));
    const chat = depth === 0 ? '' : recent.slice(-depth).join('\n');
    const recursive = b.recursive_scanning === true;
    return b.entries
      .map((e, i) => ({ e, book, order: num(e.insertion_order) ?? i, chat, recursive }))
      .filter((x) => x.e.content.trim());
  });
  const budget = Math.min(
    maxBudget,
    books.map((b) => num(b.token_budget)).find((n) => n !== undefined && n > 0) ?? DEFAULT_LORE_BUDGET,
  );
  const side = (t: Triggered) => ({ before_char: 0, after_char: 1, at_depth: 2 })[t.position];
  return enteredEntries(all, budget, maxRecursion, random)
    .map((x) => ({ x, t: placement(x.e) }))
    .sort((a, b) => side(a.t) - side(b.t) || a.x.order - b.x.order || a.x.book - b.x.book)
    .map(({ t }) => t);
}

/** Every /regex/ key of a book's entries, primary and secondary, in order: what LOREBOOK_LIMITS.regexKeys counts. */
export const regexKeysOf = (entries: readonly Pick<LoreEntry, 'keys' | 'secondary_keys'>[]): string[] =>
  entries.flatMap((e) => [...e.keys, ...(e.secondary_keys ?? [])]).filter(isRegexKey);
