import { z } from 'zod';

/**
 * A Part is one piece of a Message (seed 000). The same shape travels in a `part` frame, where it is a
 * fragment that the fold merges into the Message's Parts, and sits in the stored `parts` column.
 */
export const TextPart = z.object({ type: z.literal('text'), text: z.string() });
export const ReasoningPart = z.object({ type: z.literal('reasoning'), text: z.string() });

export const ToolState = z.enum(['running', 'done', 'failed']);
export const ToolPart = z.object({
  type: z.literal('tool'),
  /** The Provider's tool call id: a result or failure lands on the call with the same id. */
  id: z.string(),
  name: z.string().optional(),
  /** An MCP tool's own description (clipped): the default summary when the call is published. */
  description: z.string().optional(),
  input: z.unknown().optional(),
  state: ToolState,
  output: z.unknown().optional(),
  error: z.string().optional(),
});

export const Part = z.discriminatedUnion('type', [TextPart, ReasoningPart, ToolPart]);

export type TextPart = z.infer<typeof TextPart>;
export type ReasoningPart = z.infer<typeof ReasoningPart>;
export type ToolPart = z.infer<typeof ToolPart>;
export type ToolState = z.infer<typeof ToolState>;
export type Part = z.infer<typeof Part>;
