import { z } from 'zod';

/** Every covered run becomes this bar, whatever its length, so the bar does not say how long the words were. */
export const REDACTION_BAR = '█'.repeat(8);

/** A covered range of a turn's flat text, in UTF-16 code units, end exclusive. */
export const Span = z
  .object({ start: z.number().int().min(0), end: z.number().int().min(0) })
  .refine((s) => s.end > s.start, { message: 'a redaction covers at least one character' });
export type Span = z.infer<typeof Span>;

/**
 * Spans clamped to a text of `length`, sorted, and merged where they overlap or touch: one covered run is one
 * bar, so two adjacent selections cannot reveal where one ended.
 */
export function mergeSpans(spans: readonly Span[], length: number): Span[] {
  const sorted = spans
    .map((s) => ({ start: Math.min(s.start, length), end: Math.min(s.end, length) }))
    .filter((s) => s.end > s.start)
    .sort((a, b) => a.start - b.start || a.end - b.end);
  const merged: Span[] = [];
  for (const span of sorted) {
    const last = merged.at(-1);
    if (last && span.start <= last.end) last.end = Math.max(last.end, span.end);
    else merged.push(span);
  }
  return merged;
}
