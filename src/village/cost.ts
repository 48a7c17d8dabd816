import { costFromUsage } from 'tokenlens';
import type { ProviderKind } from './providers.ts';

/**
 * A reply's cost in USD from tokenlens's maintained model registry, or null when the Model's price is not
 * known (local endpoints, the demo Model, models the registry lacks). Never a hand-typed price table.
 */
export function costUsd(
  kind: ProviderKind | undefined,
  providerId: string,
  model: string,
  usage: {
    inputTokens: number | null;
    outputTokens: number | null;
    cachedInputTokens?: number | null;
  } | null,
  /** Tokens written to the Provider's prompt cache (Anthropic prices them above plain input). */
  cacheWriteTokens: number | null = null,
): number | null {
  if (!usage || !kind || kind === 'demo') return null;
  const id = `${kind === 'compatible' ? providerId : kind}:${model}`;
  // The AI SDK's input count is the whole prompt, cache reads and writes included; tokenlens prices plain
  // input, cache reads and cache writes each at their own rate, so each is passed once.
  const reads = usage.cachedInputTokens ?? 0;
  const writes = cacheWriteTokens ?? 0;
  try {
    const cost = costFromUsage({
      id: id as never,
      usage: {
        inputTokens: Math.max(0, (usage.inputTokens ?? 0) - reads - writes),
        outputTokens: usage.outputTokens ?? 0,
        cachedInputTokens: reads,
        cacheWrites: writes,
      } as never,
    });
    return typeof cost === 'number' && Number.isFinite(cost) ? cost : null;
  } catch {
    return null;
  }
}
