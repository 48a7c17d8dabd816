import { RE2JS, RE2JSSyntaxException } from 're2js';

/**
 * Whether a lorebook key appears in a text, as SillyTavern matches keys: a key written `/pattern/flags` is a
 * regular expression (its flags decide case; whole-word and case settings do not apply), any other key is text,
 * matched as a whole word or anywhere, with or without case, as the entry says. Pure.
 *
 * A card's keys are someone else's input run on every turn, on the event loop every Player shares, so each scan's
 * work is bounded whatever the book holds:
 * - A regex is never given to the JavaScript engine (whose backtracking can take exponential time on `(a+)+$`):
 *   it is compiled with RE2 (re2js), which matches in time linear in the text and refuses what cannot be matched
 *   so (backreferences, lookaround). Linear is not cheap: a run costs about its window times the size of its
 *   compiled program (counted repetition copies its atom: `[ab]{290}c` took 0.28 s over 20,000 characters, and
 *   27 copies of `a{1000}` took 66 ms to compile and 39 s to run). So a pattern is at most REGEX_LIMITS.pattern
 *   characters and REGEX_LIMITS.program instructions (refused before RE2 builds a larger one), it sees the newest
 *   REGEX_LIMITS.text characters, and one scan's regex keys together spend at most REGEX_LIMITS.perScan units.
 * - A text key is a lookup in the scan's words (built once per text) when it is one word; otherwise a native
 *   search, and one scan's searches together read at most REGEX_LIMITS.textPerScan characters.
 * A key past a bound never matches (this turn, for the per-scan bounds), and `keyProblem` says why of a pattern.
 */

export const REGEX_LIMITS = {
  /** A key's pattern, between its slashes. */
  pattern: 200,
  /** The window a regex key is run over: its newest characters. */
  text: 20_000,
  /** Instructions of a pattern's compiled program: real keys take 5–60. */
  program: 100,
  /**
   * Units one scan's regex keys may spend: a run costs its window's characters (at least MIN_RUN) times its
   * program's weight (`weightOf`), and each key a scan runs costs COMPILE once: about 0.15 s at the worst measured.
   */
  perScan: 200_000,
  /** Characters one scan's text keys may search (a one-word key is a lookup and reads none). */
  textPerScan: 50_000_000,
  /** Keys one scan may try, of every kind (8 books of 500 entries of 100 keys, over 4 passes, would be 1.6 million). */
  keysPerScan: 200_000,
  /** Code points a case-insensitive pattern's class ranges may span: RE2 folds the case of each (one took 1.5 s). */
  foldedRange: 2_000,
};
/** What each key a scan runs costs once (its compile, or its lookup in the compiled patterns kept). */
export const COMPILE = 1_000;
/** The least a regex run costs, however short its window: a flood of keys over a short text is bounded too. */
export const MIN_RUN = 64;
/**
 * A program's weight: what a character of its window costs. Measured at the worst: 25–36 ms per 20,000 characters
 * for 23 instructions (`(?:a|a?){5}b`), 85 ms for 103: about 13 ms a weight.
 */
export const weightOf = (instructions: number): number => 1 + Math.floor(instructions / 10);

/** What is left of one scan's work (see REGEX_LIMITS), shared by every key of one `triggerEntries`. */
export interface ScanBudget {
  chars: number;
  text: number;
  keys: number;
  /** Regex keys this scan has run (each pays COMPILE once). */
  seen: Set<string>;
}
export const scanBudget = (): ScanBudget => ({
  chars: REGEX_LIMITS.perScan,
  text: REGEX_LIMITS.textPerScan,
  keys: REGEX_LIMITS.keysPerScan,
  seen: new Set(),
});

/** A text a scan reads, with what its keys need of it made once: its lower case, its words. */
export class ScanText {
  readonly #words = new Map<boolean, Set<string>>();
  #lower?: string;
  constructor(readonly raw: string) {}
  text(caseSensitive: boolean): string {
    if (caseSensitive) return this.raw;
    this.#lower ??= this.raw.toLowerCase();
    return this.#lower;
  }
  /** Its words: the runs of letters, digits and underscores the whole-word match stops at. */
  words(caseSensitive: boolean): Set<string> {
    let words = this.#words.get(caseSensitive);
    if (!words) {
      words = new Set(this.text(caseSensitive).match(WORDS) ?? []);
      this.#words.set(caseSensitive, words);
    }
    return words;
  }
}
const WORDS = /[\p{L}\p{N}_]+/gu;
const ONE_WORD = /^[\p{L}\p{N}_]+$/u;

/** SillyTavern's reading of a key as a regex (`parseRegexFromString`): `/…/` with JavaScript's flags after. */
const REGEX_KEY = /^\/([\s\S]+?)\/([gimsuy]*)$/;
/** Longer than this, a key is no regex this app runs (its pattern is over the limit), and is not parsed as one. */
const LONGEST_REGEX_KEY = REGEX_LIMITS.pattern * 2 + 8;

type Compiled = { ok: true; re: RE2JS; weight: number } | { ok: false; why: string };
const compiled = new Map<string, Compiled>();
/** Compiled patterns kept between turns (a book's keys come back every turn); a bound so a flood cannot grow it. */
const CACHE_SIZE = 2_000;

/** Characters of the keys the compiled patterns are kept by (for tests: the cache's size is its keys'). */
export const keptKeyChars = (): number => [...compiled.keys()].reduce((n, k) => n + k.length, 0);

/** Whether a key is written as a regex (`/pattern/flags`). */
export function isRegexKey(key: string): boolean {
  const k = key.trim();
  if (k.length > LONGEST_REGEX_KEY) return k.startsWith('/');
  const m = REGEX_KEY.exec(k);
  // An unescaped slash inside means it is not one regex (SillyTavern reads it as text too).
  return !!m && !/(^|[^\\])\//.test(m[1]!);
}

const TOO_LONG: Compiled = { ok: false, why: `longer than ${REGEX_LIMITS.pattern} characters` };
const TOO_WIDE: Compiled = {
  ok: false,
  why: `too wide a range for a pattern that ignores case (more than ${REGEX_LIMITS.foldedRange} characters)`,
};
const TOO_LARGE: Compiled = {
  ok: false,
  why: `too large a pattern (its repetition makes more than ${REGEX_LIMITS.program} steps)`,
};

function compile(key: string): Compiled {
  const k = key.trim();
  // Not kept: a key of a megabyte (stored before keys were bounded) must not be a megabyte in the cache.
  if (k.length > LONGEST_REGEX_KEY) return TOO_LONG;
  const hit = compiled.get(k);
  if (hit) return hit;
  const m = REGEX_KEY.exec(k);
  const pattern = m ? m[1]!.replaceAll('\\/', '/') : '';
  const flags = m?.[2] ?? '';
  let out: Compiled;
  if (!m || pattern.length > REGEX_LIMITS.pattern) out = TOO_LONG;
  // Estimated first: RE2 builds a program as large as the repetition asks before it can be measured.
  else if (expandedSize(pattern) > REGEX_LIMITS.program * 2) out = TOO_LARGE;
  else if (
    (flags.includes('i') || /\(\?[a-zA-Z]*i/.test(pattern)) &&
    // Quoted text (`\Q…\E`, which JavaScript has not) is not read here: a pattern ignoring case may not quote.
    (pattern.includes('\\Q') || rangeSpan(pattern) > REGEX_LIMITS.foldedRange)
  )
    out = TOO_WIDE;
  else
    try {
      const f =
        (flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0) |
        (flags.includes('s') ? RE2JS.DOTALL : 0) |
        (flags.includes('m') ? RE2JS.MULTILINE : 0);
      const re = RE2JS.compile(pattern, f);
      const size = programSize(re) ?? expandedSize(pattern);
      out = size > REGEX_LIMITS.program ? TOO_LARGE : { ok: true, re, weight: weightOf(size) };
    } catch (e) {
      // RE2 refuses backreferences and lookaround (they need backtracking) and JavaScript-only syntax; re2js itself
      // fails on some patterns it should take (`/\p{Cyrillic}+/i`), whose words would mean nothing to an author.
      const said =
        e instanceof RE2JSSyntaxException ? e.message.replace(/^error parsing regexp: /, '') : null;
      out = { ok: false, why: `not a pattern this app runs safely${said ? ` (${said})` : ''}` };
    }
  if (compiled.size >= CACHE_SIZE) compiled.delete(compiled.keys().next().value!);
  compiled.set(k, out);
  return out;
}

/** The compiled program's instructions, as re2js keeps them (undefined should a release keep them elsewhere). */
function programSize(re: RE2JS): number | undefined {
  const n = (re as unknown as { re2Input?: { prog?: { inst?: unknown[] } } }).re2Input?.prog?.inst?.length;
  return typeof n === 'number' ? n : undefined;
}

/**
 * About how many instructions RE2 makes of a pattern: each atom one, a group its contents, and counted repetition
 * (`{n}`, `{n,}`, `{n,m}`) its atom copied n (or m) times, nested repetition multiplying. Rough, and never used
 * alone to accept: only to refuse, before compiling, a pattern far past the limit.
 */
export function expandedSize(pattern: string): number {
  const frames = [{ size: 0, last: 0 }];
  const add = (n: number) => {
    const top = frames.at(-1)!;
    top.size += n;
    top.last = n;
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      i++;
      // \p{Greek}, \x{1F600}: braces that are no repetition.
      if ('pPx'.includes(pattern[i] ?? '') && pattern[i + 1] === '{') i = endOf(pattern, '}', i);
      add(1);
    } else if (c === '[') {
      i = endOfClass(pattern, i);
      add(1);
    } else if (c === '(') frames.push({ size: 0, last: 0 });
    else if (c === ')') {
      const group = frames.length > 1 ? frames.pop()! : { size: 0 };
      add(Math.max(1, group.size));
    } else if (c === '{' && /^\{\d+(,\d*)?\}/.test(pattern.slice(i, i + 24))) {
      const [, n, m] = /^\{(\d+)(?:,(\d*))?\}/.exec(pattern.slice(i, i + 24))!;
      const times = Math.max(Number(n), Number(m || n));
      const top = frames.at(-1)!;
      top.size += top.last * (times - 1);
      top.last *= times;
      i = endOf(pattern, '}', i);
    } else if ('*+?|'.includes(c)) frames.at(-1)!.size += 1;
    else add(1);
  }
  return frames.reduce((sum, f) => sum + f.size, 0);
}

/**
 * How many code points the ranges of a pattern's classes span (`[a-z]` 25): what RE2 folds the case of, one by
 * one, when the pattern ignores case. A range with an escaped end counts as every code point (not worked out).
 */
export function rangeSpan(pattern: string): number {
  let span = 0;
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++;
    else if (pattern[i] === '[') {
      const { members, end } = classAt(pattern, i);
      for (let j = 1; j + 1 < members.length; j++) {
        if (members[j] !== '-') continue;
        const [a, b] = [members[j - 1]!, members[j + 1]!];
        const single = (m: string) => m[0] !== '\\' && [...m].length === 1;
        span += single(a) && single(b) ? Math.max(0, b.codePointAt(0)! - a.codePointAt(0)!) : 0x10ffff;
        j++;
      }
      i = end;
    }
  }
  return span;
}

/**
 * The class opened at `open`, read as RE2 reads one: its members (a code point; an escape, with its braces; a
 * POSIX `[:name:]`) and where its `]` is (one first, or after `^`, is a member).
 */
function classAt(pattern: string, open: number): { members: string[]; end: number } {
  const members: string[] = [];
  let i = open + 1;
  if (pattern[i] === '^') i++;
  const take = (n: number) => {
    members.push(pattern.slice(i, i + n));
    i += n;
  };
  if (pattern[i] === ']') take(1);
  while (i < pattern.length && pattern[i] !== ']') {
    const posix = pattern.startsWith('[:', i) ? pattern.indexOf(':]', i + 2) : -1;
    if (posix >= 0) take(posix + 2 - i);
    else if (pattern[i] === '\\') {
      const braced = 'pPx'.includes(pattern[i + 1] ?? '') && pattern[i + 2] === '{';
      take(braced ? endOf(pattern, '}', i) + 1 - i : 2);
    } else take(String.fromCodePoint(pattern.codePointAt(i)!).length);
  }
  return { members, end: i };
}

/** Where the class opened at `open` ends. */
const endOfClass = (pattern: string, open: number): number => classAt(pattern, open).end;

const endOf = (s: string, c: string, from: number) => {
  const at = s.indexOf(c, from);
  return at < 0 ? s.length : at;
};

/** A regex key's weight (what each character of its window costs a scan), or null when it never matches. */
export function regexWeight(key: string): number | null {
  const c = isRegexKey(key) ? compile(key) : undefined;
  return c?.ok ? c.weight : null;
}

/** Why a regex key never matches (refused, or too long), or null when it is plain text or a pattern that runs. */
export function keyProblem(key: string): string | null {
  if (!isRegexKey(key)) return null;
  const c = compile(key);
  return c.ok ? null : `The key ${key.slice(0, 60)} is ${c.why}: it never matches.`;
}

export interface MatchOptions {
  caseSensitive: boolean;
  wholeWords: boolean;
}

/** Whether `key` appears in `text` (see the module's comment). */
export function keyMatches(
  text: string | ScanText,
  key: string,
  o: MatchOptions,
  budget: ScanBudget = scanBudget(),
): boolean {
  const scan = typeof text === 'string' ? new ScanText(text) : text;
  if (budget.keys <= 0) return false;
  budget.keys--;
  if (isRegexKey(key)) return regexMatches(scan.raw, key, budget);
  const k = o.caseSensitive ? key.trim() : key.trim().toLowerCase();
  if (!k) return false;
  // A whole word when the key starts and ends with a word character; else anywhere (a key like "Dr." or "#tag").
  const whole = o.wholeWords && /^\w/u.test(k) && /\w$/u.test(k);
  if (whole && ONE_WORD.test(k)) return scan.words(o.caseSensitive).has(k);
  const t = scan.text(o.caseSensitive);
  const cost = Math.max(t.length, MIN_RUN);
  if (budget.text < cost) return false;
  budget.text -= cost;
  return whole ? hasPhrase(t, k, budget) : t.includes(k);
}

const WORD_CHAR = /^[\p{L}\p{N}_]$/u;
/**
 * Whether `k` (starting and ending with an ASCII word character) is in `t` with no word character either side. Each
 * place it is found but inside a word costs the scan MIN_RUN characters more (a text of "a ba ba b…" has many).
 */
function hasPhrase(t: string, k: string, budget: ScanBudget): boolean {
  for (let at = t.indexOf(k); at >= 0; at = t.indexOf(k, at + 1)) {
    if (budget.text < MIN_RUN) return false;
    budget.text -= MIN_RUN;
    // The code point before (a surrogate pair read whole) and the one after.
    const pair = at > 1 && /[\uDC00-\uDFFF]/.test(t[at - 1]!) && /[\uD800-\uDBFF]/.test(t[at - 2]!);
    const before = at === 0 ? undefined : t.codePointAt(pair ? at - 2 : at - 1);
    const after = t.codePointAt(at + k.length);
    const word = (cp: number | undefined) => cp !== undefined && WORD_CHAR.test(String.fromCodePoint(cp));
    if (!word(before) && !word(after)) return true;
  }
  return false;
}

function regexMatches(text: string, key: string, budget: ScanBudget): boolean {
  if (!budget.seen.has(key)) {
    if (budget.chars < COMPILE) return false;
    budget.chars -= COMPILE;
    budget.seen.add(key);
  }
  const c = compile(key);
  if (!c.ok) return false;
  const window = text.slice(-REGEX_LIMITS.text);
  const cost = Math.max(window.length, MIN_RUN) * c.weight;
  if (budget.chars < cost) return false;
  budget.chars -= cost;
  return c.re.matcher(window).find();
}
