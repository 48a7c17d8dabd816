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
 * Identifiers, not words, whole strings only: a did:plc or did:key (their letters are random, and a short covered
 * word can be found in them), and a timestamp, which a reader is shown formatted if at all (a covered "2026" would
 * refuse every link made this year). Any other DID is read: a did:web is its host's name, and a string shaped like
 * a DID can be anyone's words.
 */
const RANDOM_DID = 'did:(?:plc:[a-z2-7]{24}|key:z[1-9A-HJ-NP-Za-km-z]+)';
const IDENTIFIER = new RegExp(`^(?:${RANDOM_DID}|\\d{4}-\\d\\d-\\d\\dT[\\d:.]+(?:Z|[+-]\\d\\d:\\d\\d))$`);
/** An at-URI of such a DID: its collection and record key are read, as a publish reads a link's (coverAtOnce.ts). */
const AT_URI_OF_RANDOM_DID = new RegExp(`^at://${RANDOM_DID}(/.*)?$`);
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
      // An at-URI of a random DID: its path alone (nothing, when it names the repo only).
      const uri = AT_URI_OF_RANDOM_DID.exec(v);
      if (uri && !uri[1]) continue;
      const read = uri ? uri[1]! : v;
      chars += read.length;
      if (out.push(read) > SHOWN_STRINGS || chars > SHOWN_CHARS) return null;
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
