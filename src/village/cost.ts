import { costFromUsage } from 'tokenlens';
import type { ProviderKind } from '../config.ts';

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
): number | null {
  if (!usage || !kind || kind === 'demo') return null;
  const id = `${kind === 'compatible' ? providerId : kind}:${model}`;
  try {
    const cost = costFromUsage({
      id: id as never,
      usage: {
        inputTokens: usage.inputTokens ?? 0,
        outputTokens: usage.outputTokens ?? 0,
        cachedInputTokens: usage.cachedInputTokens ?? 0,
      } as never,
    });
    return typeof cost === 'number' && Number.isFinite(cost) ? cost : null;
  } catch {
    return null;
  }
}
