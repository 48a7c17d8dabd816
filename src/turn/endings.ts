import type { FinishReason } from 'ai';

/**
 * What the Provider's finish reason means for the reply (issue 27). Only `stop` and `tool-calls` are a
 * finished reply; `length` is one cut at the output limit, kept and shown as cut; `content-filter` is the
 * Provider refusing; anything else — `interrupted` (the stream ended without the Provider's end, as a proxy
 * time-out or Gemini's in-band 503 leave it), `error`, `other`, a reason this build does not know — is a reply
 * the Provider did not finish. Pure.
 */
export type Ending = 'complete' | 'truncated' | 'blocked' | 'unfinished';

export function endingOf(reason: FinishReason | string | undefined): Ending {
  switch (reason) {
    case 'stop':
    case 'tool-calls':
      return 'complete';
    case 'length':
      return 'truncated';
    case 'content-filter':
      return 'blocked';
    default:
      return 'unfinished';
  }
}

/**
 * A step whose usage is the Provider's account of it. An `interrupted` step never got its final count: what
 * the SDK reports for it is a half figure, which ADR 0032 keeps out of stored usage (the budget is charged an
 * estimate instead).
 */
export const counted = (reason: FinishReason | string | undefined): boolean => reason !== 'interrupted';

/**
 * The `maxOutputTokens` a reply asks for: the Model's own limit from the registry, lowered by the Village's
 * setting when it has one; undefined when neither is known, so the Provider keeps its default. Anthropic with
 * thinking adds the thinking budget on top of it (and, for a Model the AI SDK knows, clamps the sum with a
 * warning on every call): there only the Village's cap is sent, the SDK's own limit otherwise. Pure.
 */
export function outputTokens(
  modelLimit: number | undefined,
  villageMax: number | null,
  addsThinkingBudget = false,
): number | undefined {
  if (villageMax == null) return addsThinkingBudget ? undefined : modelLimit;
  return modelLimit === undefined ? villageMax : Math.min(modelLimit, villageMax);
}
