import { z } from 'zod';
import { type Cover, makeCover } from './cover.ts';
import { mergeSpans, Span } from './spans.ts';

/** What the Player decided about one turn before publishing it. */
export const TurnChoice = z
  .object({
    withheld: z.boolean().optional(),
    /** Ranges of the turn's flat text to cover. The words under them are covered everywhere (see cover.ts). */
    redactions: z.array(Span).max(500).optional(),
    /** Step summaries by tool-call index; null or absent keeps the neutral default. */
    steps: z.array(z.string().max(2000).nullable()).max(100).optional(),
    refs: z.array(z.string().max(500)).max(50).optional(),
    mentions: z.array(z.string().max(300)).max(50).optional(),
  })
  .strict();
export type TurnChoice = z.infer<typeof TurnChoice>;

/** Choices by Message id. */
export const Choices = z.record(z.string(), TurnChoice);
export type Choices = z.infer<typeof Choices>;

/**
 * The Conversation's cover: the words under every redaction of every turn, withheld or not (a redaction is a
 * decision about words, not about one span), to be covered in every string that is published.
 */
export function coverOf(turns: readonly { id: string; text: string }[], choices: Choices): Cover {
  const words: string[] = [];
  for (const { id, text } of turns) {
    for (const span of mergeSpans(choices[id]?.redactions ?? [], text.length)) {
      words.push(text.slice(span.start, span.end));
    }
  }
  return makeCover(words);
}

/** Places in `text` that the cover reaches beyond the turn's own redactions: what the editor points out. */
export function extraPlaces(text: string, own: readonly Span[], cover: Cover): Span[] {
  const mine = mergeSpans(own, text.length);
  return cover.find(text).filter((p) => !mine.some((m) => p.start < m.end && m.start < p.end));
}
