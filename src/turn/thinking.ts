import type { streamText } from 'ai';
import type { Part } from '../parts/index.ts';

type ProviderOptions = NonNullable<Parameters<typeof streamText>[0]['providerOptions']>;

/**
 * What each Provider needs beyond the AI SDK's `reasoning` effort for visible reasoning to come back. Gemini
 * returns thought text only when asked (`includeThoughts`); the effort alone sets a budget and nothing shows.
 * Anthropic and OpenAI return their summaries with `reasoning` alone. Pure.
 */
export function thinkingOptions(kind: string | undefined, thinking: boolean): ProviderOptions | undefined {
  if (!thinking) return undefined;
  if (kind === 'google') return { google: { thinkingConfig: { includeThoughts: true } } };
  return undefined;
}

/**
 * A new reasoning section (a Provider's `reasoning-start`) right after reasoning text: a blank line between
 * them, so the fold — which joins consecutive reasoning — keeps OpenAI's summary sections and Anthropic's
 * thinking blocks apart instead of running them together. The same fragment reaches the browser, so a
 * reloaded transcript still equals the streamed one. Pure.
 */
export function sectionBreak(parts: readonly Part[]): Part | null {
  const last = parts.at(-1);
  return last?.type === 'reasoning' && last.text.trim() ? { type: 'reasoning', text: '\n\n' } : null;
}
