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
    /**
     * Step names by tool-call index; null or absent keeps the default: the server's own Tools by their name, an
     * MCP Server's tool by a generic one (its real name carries the Player's label for the server).
     */
    stepNames: z.array(z.string().max(320).nullable()).max(100).optional(),
    /** A withheld turn's hole shows when it happened (else only a coarse time: see the projection). */
    keepTime: z.boolean().optional(),
    /** A withheld NPC turn's hole names the model that wrote it (else none). */
    keepModel: z.boolean().optional(),
    refs: z.array(z.string().max(500)).max(50).optional(),
    mentions: z.array(z.string().max(300)).max(50).optional(),
    /**
     * What the turn's attachments showed, in the Player's words: they are never published (their bytes stay on the
     * server), so a turn whose meaning depends on a picture can say what it was. Added to the published text
     * (and covered like every published string).
     */
    attachmentNote: z.string().max(1000).optional(),
  })
  .strict();
export type TurnChoice = z.infer<typeof TurnChoice>;

/**
 * What the session record says of one NPC besides its name and Job Title: a description only in the Player's own
 * words (an imported card's description is its whole character definition). Empty or absent: none. `avatar`: its
 * picture is published too (ADR 0065); off unless ticked, since a card's art is often someone else's.
 */
export const AgentChoice = z
  .object({ description: z.string().max(3000).optional(), avatar: z.boolean().optional() })
  .strict();
export type AgentChoice = z.infer<typeof AgentChoice>;
/** Agent choices by NPC id. */
export const AgentChoices = z.record(z.uuid(), AgentChoice);
export type AgentChoices = z.infer<typeof AgentChoices>;

/**
 * At most so many covered words in a Conversation's choices (the selections of its turns and the words still
 * covered from turns gone since), of at most so many characters in all: a cover is made over all of them for
 * every publish, preview and live turn, and costs about 1.5 µs a character (50,000: 75–110 ms of the event loop)
 * and 2 µs a word (5,000 selections, up to 10,000 words: about 170 ms).
 */
export const MAX_REDACTIONS = 5_000;
export const MAX_COVERED_CHARS = 50_000;

/**
 * What a cover of these words would cost, in characters of distinct words, and whether it keeps to the bounds
 * with `count` selections: the one rule for refusing a publish (publish/plan.ts) and for what the reader makes.
 */
export function coverBounds(count: number, words: Iterable<string>): { chars: number; within: boolean } {
  let chars = 0;
  for (const w of new Set(words)) chars += w.length;
  return { chars, within: count <= MAX_REDACTIONS && chars <= MAX_COVERED_CHARS };
}

/** How many redactions these choices hold in all. */
export const redactionCount = (choices: Choices): number =>
  Object.values(choices).reduce((sum, c) => sum + (c.redactions?.length ?? 0), 0);

/** Choices by Message id. */
export const Choices = z.record(z.string(), TurnChoice);
export type Choices = z.infer<typeof Choices>;

/**
 * The Conversation's cover: the words under every redaction of every turn, withheld or not (a redaction is a
 * decision about words, not about one span), to be covered in every string that is published.
 */
export function coverOf(
  turns: readonly { id: string; text: string }[],
  choices: Choices,
  more: Iterable<string> = [],
): Cover {
  return makeCover([
    ...turns.flatMap(({ id, text }) => coveredWords(text, choices[id]?.redactions ?? [])),
    ...more,
  ]);
}

/**
 * The words a turn's redactions cover: each selection's own words, and each merged run's (two touching
 * selections are one bar, but "Zephyr" selected before "Zephyr Station" must still be found alone).
 */
export function coveredWords(text: string, redactions: readonly Span[]): string[] {
  const words = new Set<string>();
  for (const span of [...mergeSpans(redactions, text.length), ...redactions]) {
    const w = text.slice(Math.min(span.start, text.length), Math.min(span.end, text.length));
    if (w) words.add(w);
  }
  return [...words];
}

/** Places in `text` that the cover reaches beyond the turn's own redactions: what the editor points out. */
export function extraPlaces(text: string, own: readonly Span[], cover: Cover): Span[] {
  const mine = mergeSpans(own, text.length);
  return cover.find(text).filter((p) => !mine.some((m) => p.start < m.end && m.start < p.end));
}
