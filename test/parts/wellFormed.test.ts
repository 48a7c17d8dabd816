import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { wellFormed } from '../../src/parts/index.ts';

// No NUL, and every surrogate in a pair (what String.prototype.isWellFormed checks, written out for ES2023).
const storable = (s: string) =>
  !s.includes('\u0000') && !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

describe('wellFormed', () => {
  it('makes any string storable in jsonb, and leaves storable ones as they are', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const out = wellFormed(s);
        expect(storable(out)).toBe(true);
        expect(out.length).toBe(s.length);
        if (storable(s)) expect(out).toBe(s);
      }),
      { numRuns: 500 },
    );
  });

  it('reaches into tool inputs and outputs, keys included', () => {
    const part = { type: 'tool', input: { 'k\u0000': ['a\uD800', { deep: 'x\u0000y' }] }, output: 'ok' };
    expect(wellFormed(part)).toEqual({
      type: 'tool',
      input: { 'k\uFFFD': ['a\uFFFD', { deep: 'x\uFFFDy' }] },
      output: 'ok',
    });
    const fine = { type: 'text', text: 'fine 👍' };
    expect(wellFormed(fine)).toBe(fine);
  });

  it('keeps a "__proto__" key as a key of its own, never as the prototype of what it rebuilds', () => {
    const parsed = JSON.parse('{"__proto__":{"polluted":1},"b":"x\\u0000"}') as Record<string, unknown>;
    const out = wellFormed(parsed) as Record<string, unknown>;
    expect(out).not.toBe(parsed);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect((out as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":1},"b":"x\uFFFD"}');
  });
});
