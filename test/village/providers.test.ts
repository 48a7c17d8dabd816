import { expect, it } from 'vitest';
import { ProviderRegistry } from '../../src/village/index.ts';

// Making a Model is not free (the OpenAI-compatible one builds its zod chunk schemas): one per Provider and
// Model is reused across turns, and the Model name is whatever an NPC says, so the cache is bounded.
it('reuses one Model per Provider and Model, and keeps only the most recently used', () => {
  const registry = new ProviderRegistry([
    { id: 'local', kind: 'compatible', baseURL: 'http://127.0.0.1:9/v1' },
    { id: 'other', kind: 'compatible', baseURL: 'http://127.0.0.1:9/v1' },
  ]);
  const a = registry.languageModel({ provider: 'local', model: 'a' });
  expect(registry.languageModel({ provider: 'local', model: 'a' })).toBe(a);
  expect(registry.languageModel({ provider: 'local', model: 'b' })).not.toBe(a);
  expect(registry.languageModel({ provider: 'other', model: 'a' })).not.toBe(a);
  // 300 other Models, with `a` used again half-way: it survives, while the first of the others is evicted.
  const first = registry.languageModel({ provider: 'local', model: 'm0' });
  for (let i = 1; i < 300; i++) {
    registry.languageModel({ provider: 'local', model: `m${i}` });
    if (i === 150) expect(registry.languageModel({ provider: 'local', model: 'a' })).toBe(a);
  }
  expect(registry.languageModel({ provider: 'local', model: 'a' })).toBe(a);
  expect(registry.languageModel({ provider: 'local', model: 'm0' })).not.toBe(first);
});
