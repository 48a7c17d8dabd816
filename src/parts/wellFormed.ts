/**
 * Text PostgreSQL's jsonb can store: NUL becomes U+FFFD, and so does half of a surrogate pair. A Provider, a
 * tool or an MCP server can send either; jsonb refuses both, and one such string in a checkpoint batch would
 * fail every reply's checkpoint. Applied to every fragment as it arrives, deep (tool inputs and outputs). Pure.
 */
export function wellFormed<T>(value: T): T {
  if (typeof value === 'string') return clean(value) as T;
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((v) => {
      const w = wellFormed(v);
      if (w !== v) changed = true;
      return w;
    });
    return (changed ? out : value) as T;
  }
  if (value && typeof value === 'object') {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const key = clean(k);
      const w = wellFormed(v);
      if (w !== v || key !== k) changed = true;
      out[key] = w;
    }
    return (changed ? out : value) as T;
  }
  return value;
}

// A lone high surrogate (not followed by a low one), or a lone low one (not preceded by a high one).
const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const clean = (s: string) => s.replaceAll('\u0000', '\uFFFD').replace(LONE, '\uFFFD');
