import type { AttachmentPart, Part } from './types.ts';

/**
 * The flat text of a Message: its text Parts only, runs separated by a blank line. Reasoning and tool Parts
 * never enter it, so titles, lists and the copy button cannot leak them (seed 000).
 */
export function flattenText(parts: readonly Part[]): string {
  const runs: string[] = [];
  for (const part of parts) if (part.type === 'text') runs.push(part.text);
  return runs.join('\n\n');
}

/** A Message's attachments (files and pages), in order. */
export function attachmentsOf(parts: readonly Part[]): AttachmentPart[] {
  return parts.filter((p): p is AttachmentPart => p.type === 'file' || p.type === 'url');
}
