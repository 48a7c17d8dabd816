import type { LanguageModelUsage, TextStreamPart, ToolSet } from 'ai';
import type { Usage } from '../conversations/index.ts';
import type { Part } from '../parts/index.ts';

/**
 * One AI SDK stream part as a Part fragment for the fold, or null for parts that carry no content (step
 * markers, usage, errors: the turn handles those). New SDK part kinds fall through to null, so a release
 * that adds one cannot take a live reply down.
 */
export function toFragment(
  chunk: TextStreamPart<ToolSet>,
  descriptions: Record<string, string> = {},
): Part | null {
  switch (chunk.type) {
    case 'text-delta':
      return { type: 'text', text: chunk.text };
    case 'reasoning-delta':
      return { type: 'reasoning', text: chunk.text };
    case 'tool-input-start':
      return { type: 'tool', id: chunk.id, name: chunk.toolName, state: 'running' };
    case 'tool-call': {
      const description = descriptions[chunk.toolName];
      return {
        type: 'tool',
        id: chunk.toolCallId,
        name: chunk.toolName,
        input: chunk.input,
        state: 'running',
        ...(description ? { description } : {}),
      };
    }
    case 'tool-result':
      return {
        type: 'tool',
        id: chunk.toolCallId,
        name: chunk.toolName,
        state: 'done',
        output: chunk.output,
      };
    case 'tool-error':
      return {
        type: 'tool',
        id: chunk.toolCallId,
        name: chunk.toolName,
        state: 'failed',
        error: toolErrorMessage(chunk.error),
      };
    case 'tool-output-denied':
      return {
        type: 'tool',
        id: chunk.toolCallId,
        name: chunk.toolName,
        state: 'failed',
        error: 'The call was denied.',
      };
    default:
      return null;
  }
}

/**
 * A failed tool call in words for the Player. The SDK hands a call it refused before running as a string with
 * its class name in front ("AI_NoSuchToolError: Model tried to call unavailable tool 'x'. Available tools: …"):
 * the name goes, and the commonest cases — a tool the NPC does not have, arguments the tool does not take — say
 * what happened and that nothing ran. Pure.
 */
export function toolErrorMessage(error: unknown): string {
  const text = errorMessage(error).replace(/^AI_\w+Error: /, '');
  const unknown = /^Model tried to call unavailable tool '([^']*)'/.exec(text);
  if (unknown)
    return `The Model asked for a tool named “${unknown[1]}”, which this NPC does not have, so nothing ran. An NPC’s Tools are chosen on the NPCs page.`;
  const invalid = /^Invalid input for tool ([^:]+): /.exec(text);
  if (invalid)
    return `The Model called ${invalid[1]} with arguments it does not take, so nothing ran (${text.slice(invalid[0].length)}).`;
  return text;
}

export function toUsage(u: LanguageModelUsage | undefined): Usage | null {
  if (!u) return null;
  const usage: Usage = {
    inputTokens: u.inputTokens ?? null,
    outputTokens: u.outputTokens ?? null,
    reasoningTokens: u.outputTokenDetails?.reasoningTokens ?? null,
    cachedInputTokens: u.inputTokenDetails?.cacheReadTokens ?? null,
  };
  return Object.values(usage).some((n) => n != null) ? usage : null;
}

/** Sums step usages: what an aborted generation reported before it stopped. */
export function addUsage(a: Usage | null, b: Usage | null): Usage | null {
  if (!a) return b;
  if (!b) return a;
  const add = (x: number | null, y: number | null) => (x == null && y == null ? null : (x ?? 0) + (y ?? 0));
  return {
    inputTokens: add(a.inputTokens, b.inputTokens),
    outputTokens: add(a.outputTokens, b.outputTokens),
    reasoningTokens: add(a.reasoningTokens, b.reasoningTokens),
    cachedInputTokens: add(a.cachedInputTokens, b.cachedInputTokens),
  };
}

/** A Provider's error as a sentence for the Player; never a stack. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    const status = (error as { statusCode?: number }).statusCode;
    // A 200 that fails later is a stream that broke after it began.
    if (status === 200) return `The connection to the Provider broke mid-reply (${error.message}).`;
    return status ? `The Provider answered ${status}: ${error.message}` : error.message;
  }
  if (typeof error === 'string') return error;
  return 'The Provider failed without saying why.';
}
