import { RE2JS } from 're2js';

/**
 * Whether a lorebook key appears in a text, as SillyTavern matches keys: a key written `/pattern/flags` is a
 * regular expression (its flags decide case; whole-word and case settings do not apply), any other key is text,
 * matched as a whole word or anywhere, with or without case, as the entry says. Pure.
 *
 * A card's regex is someone else's code run on every turn, so it is never given to the JavaScript engine (whose
 * backtracking can take exponential time on `(a+)+$`): it is compiled with RE2 (re2js), which matches in time
 * linear in the text and refuses what cannot be matched so (backreferences, lookaround). Patterns are at most
 * REGEX_LIMITS.pattern characters and the text a regex sees is its last REGEX_LIMITS.text characters, so one key
 * costs a bounded amount of work, and one scan's regex keys together read at most REGEX_LIMITS.perScan characters;
 * a pattern refused or over the limit never matches, and `keyProblem` says why.
 */

export const REGEX_LIMITS = {
  /** A key's pattern, between its slashes. */
  pattern: 200,
  /** The window a regex key is run over: its newest characters. */
  text: 20_000,
  /**
   * Characters all regex keys together may read in one turn's scan. RE2 is linear but not free (tens of ms per
   * 20,000 characters on a busy core), and the scan runs on the event loop: 500 entries of regex keys must not
   * stall the server. Past it, further regex keys do not match this turn.
   */
  perScan: 400_000,
};

/** What is left of a scan's regex work (REGEX_LIMITS.perScan), shared by every key of one `triggerEntries`. */
export interface RegexBudget {
  chars: number;
}
export const regexBudget = (): RegexBudget => ({ chars: REGEX_LIMITS.perScan });

/** SillyTavern's reading of a key as a regex (`parseRegexFromString`): `/…/` with JavaScript's flags after. */
const REGEX_KEY = /^\/([\s\S]+?)\/([gimsuy]*)$/;

type Compiled = { ok: true; re: RE2JS } | { ok: false; why: string };
const compiled = new Map<string, Compiled>();
/** Compiled patterns kept between turns (a book's keys come back every turn); a bound so a flood cannot grow it. */
const CACHE_SIZE = 2_000;

/** Whether a key is written as a regex (`/pattern/flags`). */
export function isRegexKey(key: string): boolean {
  const m = REGEX_KEY.exec(key.trim());
  // An unescaped slash inside means it is not one regex (SillyTavern reads it as text too).
  return !!m && !/(^|[^\\])\//.test(m[1]!);
}

function compile(key: string): Compiled {
  const hit = compiled.get(key);
  if (hit) return hit;
  const m = REGEX_KEY.exec(key.trim())!;
  const pattern = m[1]!.replaceAll('\\/', '/');
  const flags = m[2]!;
  let out: Compiled;
  if (pattern.length > REGEX_LIMITS.pattern)
    out = { ok: false, why: `longer than ${REGEX_LIMITS.pattern} characters` };
  else
    try {
      const f =
        (flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0) |
        (flags.includes('s') ? RE2JS.DOTALL : 0) |
        (flags.includes('m') ? RE2JS.MULTILINE : 0);
      out = { ok: true, re: RE2JS.compile(pattern, f) };
    } catch (e) {
      // RE2 refuses backreferences and lookaround (they need backtracking) and JavaScript-only syntax.
      out = {
        ok: false,
        why: `not a pattern this app runs safely (${(e as Error).message.replace(/^error parsing regexp: /, '')})`,
      };
    }
  if (compiled.size >= CACHE_SIZE) compiled.delete(compiled.keys().next().value!);
  compiled.set(key, out);
  return out;
}

/** Why a regex key never matches (refused, or too long), or null when it is plain text or a pattern that runs. */
export function keyProblem(key: string): string | null {
  if (!isRegexKey(key)) return null;
  const c = compile(key);
  return c.ok ? null : `The key ${key.slice(0, 60)} is ${c.why}: it never matches.`;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export interface MatchOptions {
  caseSensitive: boolean;
  wholeWords: boolean;
}

/** Whether `key` appears in `text` (see the module's comment). */
export function keyMatches(
  text: string,
  key: string,
  o: MatchOptions,
  budget: RegexBudget = regexBudget(),
): boolean {
  if (isRegexKey(key)) {
    const c = compile(key);
    const window = text.slice(-REGEX_LIMITS.text);
    if (!c.ok || budget.chars < window.length) return false;
    budget.chars -= window.length;
    return c.re.matcher(window).find();
  }
  const k = o.caseSensitive ? key.trim() : key.trim().toLowerCase();
  if (!k) return false;
  const t = o.caseSensitive ? text : text.toLowerCase();
  // A whole word when the key starts and ends with a word character; else anywhere (a key like "Dr." or "#tag").
  if (!o.wholeWords || !/^\w/u.test(k) || !/\w$/u.test(k)) return t.includes(k);
  return new RegExp(`(?<![\\p{L}\\p{N}_])${escapeRegExp(k)}(?![\\p{L}\\p{N}_])`, 'u').test(t);
}
