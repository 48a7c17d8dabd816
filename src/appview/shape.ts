/**
 * Bounds on a record's shape, checked by an iterative walk before anything recursive touches it: lexicon
 * validation, `lexToJson`, `wellFormed` and `JSON.stringify` all recurse, and a record nested a few thousand
 * levels deep (any repo can hold one: a PDS stores unknown lexicons unvalidated) overflows the stack in them.
 * Ours are at most four levels deep; another app's may nest more, but not like that. Pure.
 */
import { jsonToIpld } from '@atproto/common-web';
import { lexToJson } from '@atproto/lexicon';
import { cidForRecord } from '@atproto/repo';

export interface ShapeLimits {
  depth: number;
  nodes: number;
  /** An upper bound on the record's JSON length, in UTF-16 units. */
  chars: number;
}

/** A bound on the work, not the size rule: the exact JSON length is checked (against MAX_RECORD_CHARS) after. */
export const RECORD_SHAPE: ShapeLimits = { depth: 32, nodes: 50_000, chars: 2 * 1024 * 1024 };

/**
 * Null when `value` is within the limits, else which limit it passed. Byte strings and CIDs (the relay's lex
 * values) are leaves. Stops at the first limit passed, so a hostile record costs at most `nodes` steps. Leaves are
 * counted where they are met and only containers are stacked (values and depths apart): a wide array of numbers
 * costs a loop, not a pair allocated, pushed and popped for each item. The stream runs this on every record.
 */
export function shapeProblem(value: unknown, limits: ShapeLimits = RECORD_SHAPE): string | null {
  const own = leafChars(value);
  if (own !== undefined) return own > limits.chars ? 'too large' : null;
  const values: object[] = [value as object];
  const depths: number[] = [1];
  // Counted as they are met, so a million-item array is refused before it is walked.
  let nodes = 1;
  let chars = 0;
  /** One child: a leaf counted, a container stacked; false once a limit is passed. */
  const child = (item: unknown, depth: number) => {
    if (++nodes > limits.nodes) return false;
    const c = leafChars(item);
    if (c === undefined) {
      values.push(item as object);
      depths.push(depth);
    } else chars += c;
    return true;
  };
  while (values.length) {
    const v = values.pop()!;
    const depth = depths.pop()!;
    if (depth > limits.depth) return 'nested too deeply';
    chars += 2;
    if (Array.isArray(v)) {
      for (const item of v) if (!child(item, depth + 1)) return 'too many values';
    } else
      for (const key in v) {
        if (!Object.hasOwn(v, key)) continue;
        chars += key.length + 4;
        if (!child((v as Record<string, unknown>)[key], depth + 1)) return 'too many values';
      }
    if (chars > limits.chars) return 'too large';
  }
  return null;
}

/** A leaf's share of the JSON length, or undefined for a container (an array or a plain object). */
function leafChars(v: unknown): number | undefined {
  if (typeof v === 'string') return v.length + 3;
  if (v === null || typeof v !== 'object') return 24;
  if (v instanceof Uint8Array) return Math.ceil(v.byteLength * 1.4) + 24;
  if (isCid(v)) return 80;
  return undefined;
}

// multiformats' CID marks itself so (`asCID`), whichever copy of the package made it.
const isCid = (v: object) => (v as { asCID?: unknown }).asCID === v;

/**
 * A record read as lex values (the firehose's CBOR, or the XRPC client's parse: a blob is a BlobRef, a link a CID)
 * in the JSON form the index validates and keeps. `lexToJson` recurses, so the shape is bounded first; a record
 * past it, or one that cannot be turned back, comes back as `refused` (with a null record), decided here so it is
 * skipped where it is stored.
 */
export function lexRecordAsJson(value: unknown): { record: unknown; refused?: string } {
  const problem = shapeProblem(value);
  if (problem) return { record: null, refused: problem };
  try {
    return { record: lexToJson(value as never) };
  } catch {
    return { record: null, refused: 'unreadable' };
  }
}

/**
 * A JSON-form record's CID as its repo holds it: the DAG-CBOR of its IPLD form, a blob as the link it is. (Hashed as
 * lex values, a blob is a BlobRef object and the CID another: a record with a picture was taken for another.)
 * Recursive, as `lexToJson` is: the shape is bounded first.
 */
export const jsonRecordCid = (record: unknown) => cidForRecord(jsonToIpld(record as never) as never);
