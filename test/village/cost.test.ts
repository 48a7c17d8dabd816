import * as tokenlens from 'tokenlens';
import { expect, it, vi } from 'vitest';
import { costUsd } from '../../src/village/index.ts';

// A pure unit: tokenlens is the real registry, only watched to count how often it is searched.
vi.mock('tokenlens', async (original) => {
  const real = await original<typeof import('tokenlens')>();
  return { ...real, costFromUsage: vi.fn(real.costFromUsage) };
});
const searched = vi.mocked(tokenlens.costFromUsage);
const usage = { inputTokens: 1_000_000, outputTokens: 1_000_000, cachedInputTokens: 0 };

it('a Model the registry does not price costs null, and the registry is searched for it once', () => {
  searched.mockClear();
  for (let i = 0; i < 5; i++) expect(costUsd('compatible', 'my-laptop', 'llama-local-7b', usage)).toBeNull();
  expect(searched).toHaveBeenCalledTimes(1);
});

it('a priced Model is priced every time, from the registry', () => {
  searched.mockClear();
  const first = costUsd('openai', 'openai', 'gpt-4o', usage);
  expect(first).toBeGreaterThan(0);
  expect(costUsd('openai', 'openai', 'gpt-4o', { ...usage, outputTokens: 2_000_000 })).toBeGreaterThan(
    first!,
  );
  // Once to know it is priced, then once per reply.
  expect(searched).toHaveBeenCalledTimes(3);
});
