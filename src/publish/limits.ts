import type { MessageRecord } from '../lexicon/index.ts';
import type { Problem, TurnChoice } from '../redaction/index.ts';
import { clip, graphemes } from './text.ts';

/**
 * The message lexicon's limits on a turn's record, checked on what will be written (after covering): text over a
 * limit is a problem; step names and default summaries are clipped, a summary the Player wrote over its limit is a
 * problem. Pure, like the projection that calls it.
 */

const SUMMARY_GRAPHEMES = 250;
/** The message lexicon's text limits: graphemes, and UTF-8 bytes at 10 a grapheme (as app.bsky.feed.post). */
const TEXT_GRAPHEMES = 15_000;
const TEXT_BYTES = 150_000;

const utf8 = (s: string) => new TextEncoder().encode(s).length;

/** How the projection is told of a problem in the turn it builds. */
export type Report = (code: Problem['code'], message: string) => void;

/** Limits are checked on what will be written, after covering; step names and default summaries are clipped. */
export function checkLimits(out: MessageRecord, index: number, choice: TurnChoice, problem: Report): void {
  const tooLong = out.text ? textOverLimit(out.text) : undefined;
  if (tooLong) {
    problem(
      'TEXT_TOO_LONG',
      `Turn ${index + 1} is too long to publish (${tooLong}). Redact part of it or withhold it.`,
    );
  }
  for (const [i, step] of (out.steps ?? []).entries()) {
    // Clipped only after covering: a covered word cut short would no longer be recognised, and would leak.
    step.name = clip(step.name, 64);
    const written = Boolean(choice.steps?.[i]?.trim());
    if (!written) step.summary = clip(step.summary ?? '', SUMMARY_GRAPHEMES);
    else if (graphemes(step.summary ?? '', SUMMARY_GRAPHEMES) > SUMMARY_GRAPHEMES) {
      problem(
        'SUMMARY_TOO_LONG',
        `The summary of step ${i + 1} in turn ${index + 1} is longer than 250 characters.`,
      );
    }
  }
}

/** Which of the text's limits it is over, in words (the one that was hit), or undefined when within both. */
function textOverLimit(text: string): string | undefined {
  const n = graphemes(text, TEXT_GRAPHEMES);
  if (n > TEXT_GRAPHEMES)
    return `${n.toLocaleString('en')} characters; the limit is ${TEXT_GRAPHEMES.toLocaleString('en')} characters`;
  const bytes = utf8(text);
  if (bytes > TEXT_BYTES)
    return `${bytes.toLocaleString('en')} bytes as UTF-8; the limit is ${TEXT_BYTES.toLocaleString('en')} bytes, whatever the number of characters`;
  return undefined;
}
