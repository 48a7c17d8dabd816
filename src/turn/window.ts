/** Seed 003: history is estimated at four characters per token. */
export const CHARS_PER_TOKEN = 4;

export const estimateTokens = (text: string): number => Math.ceil(text.length / CHARS_PER_TOKEN);

/**
 * How full the window is left after it overflows: what falls off is folded into the summary down to this share
 * of the budget, so the next turns fit without another summary call (one call every few turns, not a blocking
 * call on every turn of a long Conversation).
 */
export const REFILL_SHARE = 0.75;

/**
 * Trims history to a token budget before it is sent. When everything fits, everything is kept. Otherwise the
 * longest tail within `refillTo` (the budget itself unless given) is kept, and always the final turn even
 * when it alone exceeds the budget. What falls off the front is returned as `dropped`, for the rolling
 * summary. Pure.
 */
export function windowHistory<T>(
  items: readonly T[],
  budget: number,
  /** An item's cost in tokens (see `turnTokens`: its text and its attachments). */
  tokensOf: (item: T) => number,
  refillTo = budget,
): { kept: T[]; dropped: T[] } {
  const costs = items.map(tokensOf);
  const total = costs.reduce((a, b) => a + b, 0);
  if (total <= budget) return { kept: items.slice(), dropped: [] };
  let used = 0;
  let start = items.length;
  for (let i = items.length - 1; i >= 0; i--) {
    const cost = costs[i]!;
    if (i < items.length - 1 && used + cost > refillTo) break;
    used += cost;
    start = i;
  }
  return { kept: items.slice(start), dropped: items.slice(0, start) };
}
