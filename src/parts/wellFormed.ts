/**
 * Text PostgreSQL's jsonb can store: NUL becomes U+FFFD, and so does half of a surrogate pair. A Provider, a
 * tool or an MCP server can send either; jsonb refuses both, and one such string in a checkpoint batch would
 * fail every reply's checkpoint. Applied to every fragment as it arrives, deep (tool inputs and outputs). Pure.
 */
export function wellFormed<T>(value: T): T {
  if (typeof value === 'string') return wellFormedText(value) as T;
  // Text and reasoning deltas are most of a stream: their two keys are known, only the text needs looking at.
  const delta = value as { type?: unknown; text?: unknown };
  if (
    delta &&
    (delta.type === 'text' || delta.type === 'reasoning') &&
    typeof delta.text === 'string' &&
    Object.keys(delta).length === 2
  ) {
    const text = wellFormedText(delta.text);
    return (text === delta.text ? value : { type: delta.type, text }) as T;
  }
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
      const key = wellFormedText(k);
      const w = wellFormed(v);
      if (w !== v || key !== k) changed = true;
      // Defined, not assigned: a key "__proto__" (JSON.parse makes it an own key) would set the prototype.
      Object.defineProperty(out, key, { value: w, enumerable: true, writable: true, configurable: true });
    }
    return (changed ? out : value) as T;
  }
  return value;
}

/**
 * One string made storable (see wellFormed): the same string when it already is, which is nearly always.
 * toWellFormed replaces each lone surrogate with U+FFFD; the checks first keep the common case free of copies.
 */
export const wellFormedText = (s: string): string => {
  const nul = s.includes('\u0000');
  if (!nul && s.isWellFormed()) return s;
  return (nul ? s.replaceAll('\u0000', '\uFFFD') : s).toWellFormed();
};
