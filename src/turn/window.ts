/** Seed 003: history is estimated at four characters per token. */
export const CHARS_PER_TOKEN = 4;

export const estimateTokens = (text: string): number => Math.ceil(text.length / CHARS_PER_TOKEN);

/**
 * Trims history to a token budget before it is sent: keeps the longest tail that fits, and always the
 * final turn even when it alone exceeds the budget. What falls off the front is returned as `dropped`, for
 * the rolling summary. Pure.
 */
export function windowHistory<T>(
  items: readonly T[],
  budget: number,
  textOf: (item: T) => string,
): { kept: T[]; dropped: T[] } {
  let used = 0;
  let start = items.length;
  for (let i = items.length - 1; i >= 0; i--) {
    const cost = estimateTokens(textOf(items[i]!));
    if (i < items.length - 1 && used + cost > budget) break;
    used += cost;
    start = i;
  }
  return { kept: items.slice(start), dropped: items.slice(0, start) };
}
