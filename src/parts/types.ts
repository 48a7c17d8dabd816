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

/**
 * A file in a Message: one the Player attached, or one an NPC shared from its sandbox. The bytes are stored
 * once on the server (ADR 0035); the Part names them by the attachment's id.
 */
export const FilePart = z.object({
  type: z.literal('file'),
  id: z.uuid(),
  name: z.string(),
  /** Sniffed from the bytes at upload, never taken from the name or the declared type. */
  mediaType: z.string(),
  size: z.number().int().nonnegative(),
  /** What it takes of the context window, estimated at upload (images fixed, text by its length). */
  tokens: z.number().int().nonnegative().optional(),
  /** A picture's size in pixels, read from its header at upload: the transcript reserves its box with it. */
  width: z.number().int().positive().optional(),
  height: z.number().int().positive().optional(),
  /**
   * Its bytes are not on this server: it came in an imported Conversation, whose file carries names only, or the
   * server could not keep a file a Model made (`reason` says why).
   */
  missing: z.literal(true).optional(),
  /** Why a missing file's bytes are not here, in words for the Player; absent for an imported one. */
  reason: z.string().max(500).optional(),
  /** A file the Model made while it thought (a draft picture): shown with its reasoning, not as its answer. */
  thought: z.literal(true).optional(),
});
/** A page the Player attached by its URL: fetched once, kept as readable text (ADR 0035). */
export const UrlPart = z.object({
  type: z.literal('url'),
  id: z.uuid(),
  url: z.string(),
  title: z.string().optional(),
  size: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative().optional(),
  /** As a file's: the page's text came in an imported Conversation and is not on this server. */
  missing: z.literal(true).optional(),
});

export const Part = z.discriminatedUnion('type', [TextPart, ReasoningPart, ToolPart, FilePart, UrlPart]);

export type TextPart = z.infer<typeof TextPart>;
export type ReasoningPart = z.infer<typeof ReasoningPart>;
export type ToolPart = z.infer<typeof ToolPart>;
export type ToolState = z.infer<typeof ToolState>;
export type FilePart = z.infer<typeof FilePart>;
export type UrlPart = z.infer<typeof UrlPart>;
/** An attachment as a Part: a file or a page. */
export type AttachmentPart = FilePart | UrlPart;
export type Part = z.infer<typeof Part>;
