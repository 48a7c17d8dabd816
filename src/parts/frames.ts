import { z } from 'zod';

/**
 * AgentsVille's own small SSE protocol (seed 003): four frame types, discriminated by `type` inside the
 * JSON, so the browser parses every frame with one schema. A `part` frame carries a Part fragment for the
 * fold; its Part is left unparsed here so a kind this build does not know passes through and is ignored by
 * the fold instead of failing the frame (ADR 0007).
 */
export const UsageSchema = z.object({
  inputTokens: z.number().nullable(),
  outputTokens: z.number().nullable(),
  reasoningTokens: z.number().nullable(),
  cachedInputTokens: z.number().nullable(),
});

export const StartFrame = z.object({
  type: z.literal('start'),
  messageId: z.string(),
  playerMessageId: z.string(),
  npc: z.object({ id: z.string(), name: z.string() }),
  provider: z.string(),
  model: z.string(),
});
export const PartFrame = z.object({ type: z.literal('part'), messageId: z.string(), part: z.unknown() });

/**
 * The codes an error frame carries: the part of the error catalog (`wire/errors.ts`, which re-exports these)
 * that the stream speaks. Declared here, beside the frame, because `wire/` imports `parts/` and not the other
 * way round; every one is in docs/http-api.md's SSE table (test/wire/errors.test.ts).
 */
export const FRAME_ERROR_CODES = [
  'PROVIDER_RATE_LIMITED',
  'PROVIDER_OVERLOADED',
  'PROVIDER_AUTH',
  'CONTEXT_TOO_LONG',
  'MODEL_NOT_FOUND',
  'PROVIDER_BLOCKED',
  'PROVIDER_UNFINISHED',
  'PROVIDER_TIMEOUT',
  'REPLY_TOO_LONG',
  'REPLY_TIME_LIMIT',
  'PROVIDER_ERROR',
  'INTERNAL',
  'HOP_LIMIT',
  'HANDOFF_FAILED',
  'STEP_LIMIT',
  'BUDGET_SPENT',
  'REPLY_ENDED',
  /** The turn's start frame was sent, but its Message could not be stored (ADR 0099): nothing was asked. */
  'NOT_STORED',
] as const;
export type FrameErrorCode = (typeof FRAME_ERROR_CODES)[number];

export const ErrorFrame = z.object({
  type: z.literal('error'),
  messageId: z.string().nullable(),
  code: z.enum(FRAME_ERROR_CODES),
  message: z.string(),
});
export const FinishFrame = z.object({
  type: z.literal('finish'),
  messageId: z.string(),
  /**
   * `truncated`: the Provider stopped at its output limit (issue 27). `interrupted`: the server stopped while
   * writing it, or (to a viewer attached mid-reply) its writer died (see replies/).
   */
  status: z.enum(['complete', 'truncated', 'stopped', 'failed', 'interrupted']),
  usage: UsageSchema.nullable(),
});

export const Frame = z.discriminatedUnion('type', [StartFrame, PartFrame, ErrorFrame, FinishFrame]);
export type Frame = z.infer<typeof Frame>;
export type StartFrame = z.infer<typeof StartFrame>;
export type FinishFrame = z.infer<typeof FinishFrame>;

/**
 * Joins two adjacent `part` frames of one Message when both carry text (or both reasoning): the fold would
 * join them anyway, so the stream means the same with fewer frames. Anything else is left alone.
 */
export function mergeFrames(prev: Frame, next: Frame): Frame | undefined {
  if (prev.type !== 'part' || next.type !== 'part' || prev.messageId !== next.messageId) return undefined;
  const a = prev.part as { type?: unknown; text?: unknown };
  const b = next.part as { type?: unknown; text?: unknown };
  if ((a.type !== 'text' && a.type !== 'reasoning') || a.type !== b.type) return undefined;
  if (typeof a.text !== 'string' || typeof b.text !== 'string') return undefined;
  return { type: 'part', messageId: prev.messageId, part: { type: a.type, text: a.text + b.text } };
}
