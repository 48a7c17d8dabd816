import fc from 'fast-check';
import { expect, it } from 'vitest';
import { checkJsonLimits, JsonLimitError, type JsonLimits, parseBoundedJson } from '../../src/json/index.ts';

const roomy: JsonLimits = { nodes: 1e9, depth: 1000, items: 1e9, chars: 1e9 };
const bytes = (s: string) => new TextEncoder().encode(s);
const outcome = async (f: () => unknown) => {
  try {
    await f();
    return 'ok';
  } catch (e) {
    if (e instanceof JsonLimitError) return e.code;
    throw e;
  }
};

it('within its limits, any JSON parses to what JSON.parse gives, slices and all', async () => {
  await fc.assert(
    fc.asyncProperty(fc.jsonValue(), fc.nat({ max: 3 }), async (v, spaces) => {
      const text = JSON.stringify(v, null, spaces);
      expect(await parseBoundedJson(bytes(text), roomy, 'The file')).toEqual(JSON.parse(text));
    }),
    { numRuns: 500 },
  );
  // Big enough to span many slices, with multi-byte characters cut at slice edges.
  const big = Array.from({ length: 30_000 }, (_, i) => ({ i, t: `é€😀 ${i}` }));
  expect(await parseBoundedJson(bytes(`\uFEFF${JSON.stringify(big)}`), roomy, 'The file')).toEqual(big);
});

it('the streaming count and the walk of a parsed value refuse the same documents for the same reason', async () => {
  const limits = fc.record({
    nodes: fc.integer({ min: 1, max: 40 }),
    depth: fc.integer({ min: 1, max: 6 }),
    items: fc.integer({ min: 1, max: 8 }),
    chars: fc.integer({ min: 0, max: 12 }),
  });
  await fc.assert(
    fc.asyncProperty(fc.jsonValue({ maxDepth: 5 }), limits, async (v, l) => {
      const text = JSON.stringify(v);
      const streamed = await outcome(() => parseBoundedJson(bytes(text), l, 'The file'));
      const walked = await outcome(() => checkJsonLimits(JSON.parse(text), l, 'The file'));
      expect(streamed).toBe(walked);
    }),
    { numRuns: 1000 },
  );
});

it('each limit is refused with its own code and a sentence', async () => {
  const refused = async (text: string, limits: Partial<JsonLimits>, code: string, words: RegExp) => {
    const e = await parseBoundedJson(bytes(text), { ...roomy, ...limits }, 'The file').catch((x) => x);
    expect(e).toBeInstanceOf(JsonLimitError);
    expect(e).toMatchObject({ code, message: expect.stringMatching(words) });
  };
  await refused('[[[[1]]]]', { depth: 3 }, 'JSON_TOO_DEEP', /nests deeper than 3 levels/);
  await refused('[1,2,3,4]', { items: 3 }, 'JSON_TOO_MANY_VALUES', /more than 3 items/);
  await refused('{"a":1,"b":2,"c":3,"d":4}', { items: 3 }, 'JSON_TOO_MANY_VALUES', /more than 3 items/);
  await refused('[[1],[2],[3]]', { nodes: 5 }, 'JSON_TOO_MANY_VALUES', /more than 5 values/);
  await refused('["abcd"]', { chars: 3 }, 'JSON_TEXT_TOO_LONG', /longer than 3 characters/);
  await refused('{"abcd":1}', { chars: 3 }, 'JSON_TEXT_TOO_LONG', /longer than 3 characters/);
  await refused('[1,', {}, 'INVALID_JSON', /not valid JSON/);
  await refused('', {}, 'INVALID_JSON', /not valid JSON/);
  await refused('# Markdown', {}, 'INVALID_JSON', /not valid JSON/);
  // A string still open far past the limit is refused before its end arrives (or the file's).
  const open = await parseBoundedJson(
    bytes(`["${'x'.repeat(2_000_000)}`),
    { ...roomy, chars: 100 },
    'The file',
  )
    .then(() => 'ok')
    .catch((e: JsonLimitError) => e.code);
  expect(open).toBe('JSON_TEXT_TOO_LONG');
});
