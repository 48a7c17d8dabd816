import { domainToUnicode } from 'node:url';
import { isValidHandle } from '@atproto/syntax';

/**
 * What a reader may be shown of a linked record or an account, read when a publish looks its links up (ADR 0108):
 * pure, so what a hostile record or DID document may cost is bounded here.
 */

/** At most this many strings, characters of them and values in all are read of a record; past any, it is not checked. */
const SHOWN_STRINGS = 2_000;
const SHOWN_CHARS = 50_000;
const SHOWN_VALUES = SHOWN_STRINGS * 4;
/**
 * Identifiers, not words, whole strings only: a DID other than a did:web (whose letters are random, and a short
 * covered word can be found in them) and an at-URI of one; and a timestamp, which a reader is shown formatted if
 * at all (a covered "2026" would refuse every link made this year). A did:web is its host's name: it is read.
 */
const IDENTIFIER =
  /^(?:(?:at:\/\/)?did:(?!web:)[a-z]+:[a-zA-Z0-9._:%-]+(?:\/[a-zA-Z0-9._~:/-]*)?|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d))$/;
/** Keys whose values are never shown as words: a type, a hash, a language tag. */
const NOT_SHOWN = new Set(['$type', 'cid', 'langs']);

/**
 * The strings of a linked record that a reader may be shown (another AppView shows a linked post's text, its
 * link card, its alt texts), less its identifiers. Walked without recursion and within bounds; null when the
 * record holds more than them (it cannot be told clean).
 */
export function shownStrings(value: unknown): string[] | null {
  const out: string[] = [];
  let chars = 0;
  const stack: unknown[] = [value];
  // Every value read or waiting to be: an array or object of more than the bound is not walked into.
  let seen = 1;
  const visit = (x: unknown) => {
    if (++seen > SHOWN_VALUES) return false;
    stack.push(x);
    return true;
  };
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (IDENTIFIER.test(v)) continue;
      chars += v.length;
      if (out.push(v) > SHOWN_STRINGS || chars > SHOWN_CHARS) return null;
    } else if (Array.isArray(v)) {
      for (const x of v) if (!visit(x)) return null;
    } else if (v && typeof v === 'object' && plain(v)) {
      for (const k in v) if (!NOT_SHOWN.has(k) && !visit((v as Record<string, unknown>)[k])) return null;
    }
  }
  return out;
}

/** A plain object, not a lex value's class (a CID, a blob's reference: no words in them). */
const plain = (v: object) => [Object.prototype, null].includes(Object.getPrototypeOf(v));

/**
 * The handle a DID document claims as a reader may show it: lower-cased, and also as Unicode when it is punycode
 * (`xn--…`), space-separated; null when it is not a handle (a reader shows none then, and a document's
 * `alsoKnownAs` is anyone's to fill).
 */
export function shownHandle(handle: string | undefined): string | null {
  if (!handle || !isValidHandle(handle) || handle === 'handle.invalid') return null;
  const lower = handle.toLowerCase();
  const unicode = domainToUnicode(lower);
  return unicode && unicode !== lower ? `${lower} ${unicode}` : lower;
}
