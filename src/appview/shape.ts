/**
 * Bounds on a record's shape, checked by an iterative walk before anything recursive touches it: lexicon
 * validation, `lexToJson`, `wellFormed` and `JSON.stringify` all recurse, and a record nested a few thousand
 * levels deep (any repo can hold one: a PDS stores unknown lexicons unvalidated) overflows the stack in them.
 * Ours are at most four levels deep; another app's may nest more, but not like that. Pure.
 */
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
 * values) are leaves. Stops at the first limit passed, so a hostile record costs at most `nodes` steps.
 */
export function shapeProblem(value: unknown, limits: ShapeLimits = RECORD_SHAPE): string | null {
  const stack: [unknown, number][] = [[value, 1]];
  // Counted as they are pushed, so a million-item array is refused before it fills the stack.
  let nodes = 1;
  let chars = 0;
  const push = (item: unknown, depth: number) => {
    if (++nodes > limits.nodes) return false;
    stack.push([item, depth]);
    return true;
  };
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v === 'string') chars += v.length + 3;
    else if (v === null || typeof v !== 'object') chars += 24;
    else if (v instanceof Uint8Array) chars += Math.ceil(v.byteLength * 1.4) + 24;
    else if (isCid(v)) chars += 80;
    else {
      if (depth > limits.depth) return 'nested too deeply';
      chars += 2;
      if (Array.isArray(v)) {
        for (const item of v) if (!push(item, depth + 1)) return 'too many values';
      } else
        for (const key in v) {
          if (!Object.hasOwn(v, key)) continue;
          chars += key.length + 4;
          if (!push((v as Record<string, unknown>)[key], depth + 1)) return 'too many values';
        }
    }
    if (chars > limits.chars) return 'too large';
  }
  return null;
}

// multiformats' CID marks itself so (`asCID`), whichever copy of the package made it.
const isCid = (v: object) => (v as { asCID?: unknown }).asCID === v;
