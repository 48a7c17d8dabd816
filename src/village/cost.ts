import { costFromUsage } from 'tokenlens';
import { remembered } from './capabilities.ts';
import type { ProviderKind } from './providers.ts';

const registryId = (kind: ProviderKind | undefined, providerId: string, model: string) =>
  `${kind === 'compatible' ? providerId : kind}:${model}`;

/**
 * Whether the registry prices the Model at all. For a Model it lacks (a local endpoint, any name a Player types),
 * tokenlens searches its whole catalog, about 0.1 ms, on every reply's last write: the answer is remembered.
 */
const priced = remembered((kind, providerId, model) => {
  try {
    const none = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, cacheWrites: 0 };
    return (
      typeof costFromUsage({ id: registryId(kind, providerId, model) as never, usage: none as never }) ===
      'number'
    );
  } catch {
    return false;
  }
});

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
  if (!usage || !kind || kind === 'demo' || !priced(kind, providerId, model)) return null;
  const id = registryId(kind, providerId, model);
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
