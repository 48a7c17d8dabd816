import fc from 'fast-check';
import { CID } from 'multiformats/cid';
import { expect, it } from 'vitest';
import { type ShapeLimits, shapeProblem } from '../../src/appview/shape.ts';

// The shape bound's walk against its definition, computed recursively here on inputs small enough to recurse:
// a value is refused exactly when a container is nested past `depth`, the values number more than `nodes`, or
// the estimated JSON length passes `chars`; and the reason given is a limit the value does pass.
const LIMITS: ShapeLimits = { depth: 6, nodes: 300, chars: 3000 };
const cid = CID.parse('bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm');

interface Measure {
  depth: number;
  nodes: number;
  chars: number;
}

function measure(v: unknown, depth = 1): Measure {
  if (typeof v === 'string') return { depth: 0, nodes: 1, chars: v.length + 3 };
  if (v === null || typeof v !== 'object') return { depth: 0, nodes: 1, chars: 24 };
  if (v instanceof Uint8Array) return { depth: 0, nodes: 1, chars: Math.ceil(v.byteLength * 1.4) + 24 };
  if (v === cid) return { depth: 0, nodes: 1, chars: 80 };
  const entries: [string | null, unknown][] = Array.isArray(v)
    ? v.map((x) => [null, x])
    : Object.keys(v).map((k) => [k, (v as Record<string, unknown>)[k]]);
  const out = { depth, nodes: 1, chars: 2 };
  for (const [key, x] of entries) {
    const m = measure(x, depth + 1);
    out.depth = Math.max(out.depth, m.depth);
    out.nodes += m.nodes;
    out.chars += m.chars + (key === null ? 0 : key.length + 4);
  }
  return out;
}

const leaf = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ minLength: 200, maxLength: 1200 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.uint8Array({ maxLength: 600 }),
  fc.constant(cid),
);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('value'), { maxLength: 6 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 6 }),
    // Wide: many leaves in one array, past the node bound or near it.
    fc.array(leaf, { minLength: 100, maxLength: 400 }),
    // Deep: a chain past the depth bound or near it.
    fc.tuple(fc.integer({ min: 1, max: 12 }), fc.boolean()).map(([n, asArray]) => {
      let v: unknown = 'bottom';
      for (let i = 0; i < n; i++) v = asArray ? [v] : { a: v };
      return v;
    }),
  ),
}));

it('refuses exactly what passes a limit, and names a limit the value passes', () => {
  fc.assert(
    fc.property(value, (v) => {
      const m = measure(v);
      const over = {
        'nested too deeply': m.depth > LIMITS.depth,
        'too many values': m.nodes > LIMITS.nodes,
        'too large': m.chars > LIMITS.chars,
      };
      const problem = shapeProblem(v, LIMITS);
      expect(problem === null).toBe(!Object.values(over).some(Boolean));
      if (problem !== null) expect(over[problem as keyof typeof over]).toBe(true);
    }),
    { numRuns: 2000 },
  );
});

it('a value exactly at every limit passes, and one unit under any limit is refused for that limit', () => {
  fc.assert(
    fc.property(value, (v) => {
      const m = measure(v);
      const exact = { depth: m.depth, nodes: m.nodes, chars: m.chars };
      expect(shapeProblem(v, exact)).toBeNull();
      if (m.depth >= 1) expect(shapeProblem(v, { ...exact, depth: m.depth - 1 })).toBe('nested too deeply');
      if (m.nodes >= 2) expect(shapeProblem(v, { ...exact, nodes: m.nodes - 1 })).toBe('too many values');
      expect(shapeProblem(v, { ...exact, chars: m.chars - 1 })).toBe('too large');
    }),
    { numRuns: 1000 },
  );
});
