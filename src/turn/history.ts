import type { ModelMessage, UserContent } from 'ai';
import type { AttachmentPart } from '../parts/index.ts';
import { estimateTokens } from './window.ts';

export interface HistoryTurn {
  role: 'player' | 'npc';
  npcName: string | null;
  text: string;
  /** A Player Message's attachments, in order. */
  attachments?: readonly AttachmentPart[];
}

/**
 * What one attachment is sent as, loaded by the caller (turn/attachments.ts): a picture or a PDF as bytes for a
 * Model that reads them, a text file or a page as its text, or a note saying why the Model does not get it.
 */
export type AttachmentContent =
  | { kind: 'image'; bytes: Uint8Array; mediaType: string }
  | { kind: 'pdf'; bytes: Uint8Array }
  | { kind: 'text'; text: string }
  | { kind: 'note'; text: string };

/**
 * The text a turn is sent as. In a Party, an NPC's reply carries its author's name, so each NPC can tell its
 * colleagues apart and recognise its own answers; a solo Conversation is left byte-identical (ADR 0017).
 */
export function attributedText(turn: HistoryTurn, party: boolean): string {
  return party && turn.role === 'npc' && turn.npcName ? `[${turn.npcName}]: ${turn.text}` : turn.text;
}

/** What a turn costs the window: its text, and each attachment at the estimate made when it was stored. */
export function turnTokens(turn: HistoryTurn, party: boolean): number {
  let tokens = estimateTokens(attributedText(turn, party));
  for (const a of turn.attachments ?? []) tokens += a.tokens ?? Math.ceil(a.size / 4);
  return tokens;
}

export const attachmentLabel = (a: AttachmentPart) =>
  a.type === 'url' ? `the page ${a.title ? `“${a.title}” ` : ''}(${a.url})` : `${a.name} (${a.mediaType})`;

/** The attachments named in one line, for the summary's transcript. */
export function attachmentLine(turn: HistoryTurn): string {
  const list = turn.attachments ?? [];
  return list.length ? `[attached: ${list.map(attachmentLabel).join('; ')}]` : '';
}

/**
 * History as the Provider receives it. Turns with no text and nothing attached (a reply stopped before its first
 * word) are skipped. A Player turn with attachments is sent as parts: its text, then each attachment as
 * `contents` has it (missing from `contents`: a note that it could not be read). Pure.
 */
export function toModelMessages(
  turns: readonly HistoryTurn[],
  party: boolean,
  contents: ReadonlyMap<string, AttachmentContent> = new Map(),
): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const turn of turns) {
    const attached = turn.role === 'player' ? (turn.attachments ?? []) : [];
    if (!turn.text && attached.length === 0) continue;
    const content = attributedText(turn, party);
    if (turn.role === 'npc') out.push({ role: 'assistant', content });
    else if (attached.length === 0) out.push({ role: 'user', content });
    else out.push({ role: 'user', content: withAttachments(content, attached, contents) });
  }
  return out;
}

function withAttachments(
  text: string,
  attached: readonly AttachmentPart[],
  contents: ReadonlyMap<string, AttachmentContent>,
): UserContent {
  const parts: Exclude<UserContent, string> = text ? [{ type: 'text', text }] : [];
  for (const a of attached) {
    const c = contents.get(a.id) ?? { kind: 'note', text: 'it could not be read' };
    const label = attachmentLabel(a);
    switch (c.kind) {
      case 'image':
        parts.push({ type: 'text', text: `[The Player attached an image: ${label}]` });
        parts.push({ type: 'file', mediaType: c.mediaType, data: { type: 'data', data: c.bytes } });
        break;
      case 'pdf':
        parts.push({ type: 'text', text: `[The Player attached a document: ${label}]` });
        parts.push({
          type: 'file',
          data: { type: 'data', data: c.bytes },
          mediaType: 'application/pdf',
          ...(a.type === 'file' ? { filename: a.name } : {}),
        });
        break;
      case 'text':
        parts.push({
          type: 'text',
          text: `[The Player attached ${label}; its text follows]\n${c.text}\n[End of ${a.type === 'url' ? 'the page' : a.name}]`,
        });
        break;
      case 'note':
        parts.push({ type: 'text', text: `[The Player attached ${label}, but ${c.text}.]` });
        break;
    }
  }
  return parts;
}

/**
 * How many characters a prompt's messages send, for the estimate a reply is charged when its Provider reports no
 * usage (ADR 0032): their text, tool steps as their JSON, an attachment at its size in bytes (as the window
 * counts one whose estimate is missing). Not the messages' JSON: a 231-turn window took 1.4 ms a turn to
 * stringify only to be measured, and a picture's bytes stringify as an object with one key a byte. Pure.
 */
export function promptChars(messages: readonly ModelMessage[]): number {
  let chars = 0;
  for (const m of messages) {
    if (typeof m.content === 'string') chars += m.content.length;
    else for (const part of m.content) chars += partChars(part);
  }
  return chars;
}

type ContentPart = Exclude<ModelMessage['content'], string>[number];

function partChars(part: ContentPart): number {
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return part.text.length;
    case 'image':
      return sizeOf(part.image);
    case 'file':
      return sizeOf(part.data);
    default:
      return JSON.stringify(part).length;
  }
}

/** Bytes (or a string's characters) of a file's data in any of its shapes; a URL or a reference by its JSON. */
function sizeOf(data: unknown): number {
  if (typeof data === 'string') return data.length;
  if (data instanceof Uint8Array || data instanceof ArrayBuffer) return data.byteLength;
  if (data && typeof data === 'object' && 'type' in data) {
    if (data.type === 'data' && 'data' in data) return sizeOf(data.data);
    if (data.type === 'text' && 'text' in data) return sizeOf(data.text);
  }
  return JSON.stringify(data)?.length ?? 0;
}
