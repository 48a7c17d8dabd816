import { z } from 'zod';
import { flattenText, Part, plainName } from '../parts/index.ts';
import { NpcInput } from '../village/index.ts';
import type { Message } from './messages.ts';

/**
 * A Conversation as a file (issue 18): JSON that imports back the same — every Part, usage, status and time —
 * and Markdown to read. Pure: the routes stream these pieces out and feed an upload in.
 */
/** Token counts as the columns hold them (whole numbers a 32-bit integer takes). */
const tokens = z.number().int().min(0).max(2_147_483_647).nullable();
const ImportedUsage = z.object({
  inputTokens: tokens,
  outputTokens: tokens,
  reasoningTokens: tokens,
  cachedInputTokens: tokens,
});

export const EXPORT_FORMAT = 'agentsville.conversation';
/**
 * 3: NPCs carry their card fields and lorebook (issue 29). 2: Messages carry `parentId` and `onPath` (the
 * Conversation tree, ADR 0042). 1 was one path.
 */
export const EXPORT_VERSION = 3;

/**
 * An NPC as the file carries it: every field of the NPC (a character card's too, since version 3: greeting,
 * alternate greetings, personality…, as NpcInput bounds them), V3's extra card fields, and its own lorebook as the
 * card had it, so a Conversation imports back with its NPC whole. Not its grants (they name the Player's servers)
 * nor its avatar (a picture, not text: export the card for it).
 */
export const ExportedNpc = z.object({
  ...NpcInput.omit({ grants: true }).shape,
  cardExtra: z.record(z.string(), z.unknown()).default({}),
  /** The NPC's own lorebook (a card's `character_book`), read and bounded by the import (cards/lorebook.ts). */
  lorebook: z.unknown().nullable().default(null),
});
/**
 * Text an imported Message may hold: a Player's as much as the composer takes (turn/routes.ts), a reply as much as
 * REPLY_MAX_CHARS lets one grow by default. Counted over text and reasoning Parts.
 */
export const MAX_IMPORTED_PLAYER_CHARS = 100_000;
export const MAX_IMPORTED_REPLY_CHARS = 1_000_000;
const textOf = (parts: Part[]) =>
  parts.reduce((n, p) => n + (p.type === 'text' || p.type === 'reasoning' ? p.text.length : 0), 0);

const ExportedMessageFields = z.object({
  /** The id it had where it was exported (a reference only: an import gives new ids). */
  id: z.string().max(100).optional(),
  /** The `id` of the Message it follows, earlier in the file; null for a first Message. Version 1: the one before. */
  parentId: z.string().max(100).nullable().optional(),
  /** Whether it is on the branch shown (version 1: all are). */
  onPath: z.boolean().optional(),
  role: z.enum(['player', 'npc']),
  /** Index into `npcs`: the NPC that wrote it, if it still existed when exported. */
  npc: z.number().int().min(0).nullable().default(null),
  npcName: z.string().max(100).nullable().default(null),
  parts: z.array(Part).max(2000),
  status: z.enum(['streaming', 'complete', 'truncated', 'stopped', 'failed', 'interrupted']),
  error: z.string().max(10_000).nullable().default(null),
  provider: z.string().max(64).nullable().default(null),
  model: z.string().max(200).nullable().default(null),
  usage: ImportedUsage.nullable().default(null),
  costUsd: z.number().nonnegative().nullable().default(null),
  createdAt: z.iso.datetime({ offset: true }),
});
export const ExportedMessage = ExportedMessageFields.superRefine((m, ctx) => {
  const most = m.role === 'player' ? MAX_IMPORTED_PLAYER_CHARS : MAX_IMPORTED_REPLY_CHARS;
  const chars = textOf(m.parts);
  if (chars > most)
    ctx.addIssue({
      code: 'custom',
      path: ['parts'],
      message: `a ${m.role === 'player' ? "Player's Message" : 'reply'} holds at most ${most.toLocaleString('en')} characters of text (this one ${chars.toLocaleString('en')})`,
    });
});
export const ConversationExport = z.object({
  format: z.literal(EXPORT_FORMAT, {
    error: `not an AgentsVille conversation export ("format": "${EXPORT_FORMAT}")`,
  }),
  version: z
    .number()
    .int()
    .refine(
      (v) => v <= EXPORT_VERSION,
      `made by a newer AgentsVille (version ≤ ${EXPORT_VERSION} is read here)`,
    ),
  conversation: z.object({
    title: z.string().max(800).transform(plainName).pipe(z.string().max(200)).nullable().default(null),
    createdAt: z.iso.datetime({ offset: true }),
  }),
  npcs: z.array(ExportedNpc).max(12),
  messages: z.array(ExportedMessage).max(50_000),
});
export type ConversationExport = z.infer<typeof ConversationExport>;
export type ExportedMessage = z.infer<typeof ExportedMessage>;
export type ExportedNpc = z.infer<typeof ExportedNpc>;

/** One stored Message as it is written to the file; `npcIndex` maps an NPC's id to its place in `npcs`. */
export function exportMessage(
  m: Message & { onPath: boolean },
  npcIndex: Map<string, number>,
): ExportedMessage {
  return {
    id: m.id,
    parentId: m.parentId,
    onPath: m.onPath,
    role: m.role,
    npc: m.npcId ? (npcIndex.get(m.npcId) ?? null) : null,
    npcName: m.npcName,
    parts: m.parts as Part[],
    status: m.status,
    error: m.error,
    provider: m.provider,
    model: m.model,
    usage: m.usage,
    costUsd: m.costUsd,
    createdAt: m.createdAt.toISOString(),
  };
}

/**
 * The tree of an imported file: each Message's parent as an index into the file (a version 1 file, or a Message
 * with no `parentId` field, follows the one before), and the path — re-derived from the last Message marked on
 * it, so a file cannot mark a path that is not one. A parent must come earlier in the file: otherwise, null.
 */
export function importedTree(
  messages: ExportedMessage[],
): { parents: (number | null)[]; onPath: boolean[] } | string {
  const at = new Map<string, number>();
  const parents: (number | null)[] = [];
  for (const [i, m] of messages.entries()) {
    if (m.parentId === undefined) parents.push(i === 0 ? null : i - 1);
    else if (m.parentId === null) parents.push(null);
    else {
      const p = at.get(m.parentId);
      if (p === undefined)
        return `message ${i} follows "${m.parentId}", which is not an earlier message of the file`;
      parents.push(p);
    }
    if (m.id !== undefined) {
      if (at.has(m.id)) return `two messages have the id "${m.id}"`;
      at.set(m.id, i);
    }
  }
  const onPath = messages.map(() => false);
  let head: number | null = messages.findLastIndex((m) => m.onPath !== false);
  if (head < 0) head = null;
  for (let i = head; i !== null; i = parents[i]!) onPath[i] = true;
  return { parents, onPath };
}

/**
 * A Message of an imported file as the row to store. Attachments keep their name, type and size but point at
 * nothing here (a fresh id, marked `missing`, so the transcript shows their names instead of a broken picture or
 * link): their bytes are not in the file, and an id from elsewhere must never name another Player's upload. A
 * reply that was still streaming when exported is stored as interrupted.
 */
export function importedRow(
  m: ExportedMessage,
  npcIds: (string | null)[],
  newId: () => string,
  tree: { id: string; parentId: string | null; onPath: boolean },
) {
  const parts = m.parts.map((p) => {
    if (p.type === 'url') return { ...p, id: newId(), missing: true as const };
    if (p.type !== 'file') return p;
    // Imported: its bytes are not here for that reason alone, whatever reason the file gives.
    const { reason: _reason, ...file } = p;
    return { ...file, id: newId(), missing: true as const };
  });
  return {
    id: tree.id,
    parent_id: tree.parentId,
    on_path: tree.onPath,
    role: m.role,
    npc_id: m.npc === null ? null : (npcIds[m.npc] ?? null),
    npc_name: m.npcName,
    parts,
    text: flattenText(parts),
    status: m.status === 'streaming' ? 'interrupted' : m.status,
    error: m.error,
    provider: m.provider,
    model: m.model,
    input_tokens: m.usage?.inputTokens ?? null,
    output_tokens: m.usage?.outputTokens ?? null,
    reasoning_tokens: m.usage?.reasoningTokens ?? null,
    cached_input_tokens: m.usage?.cachedInputTokens ?? null,
    cost_usd: m.costUsd,
    created_at: new Date(m.createdAt),
    // Paid for where it was made, not here: Usage leaves it out.
    imported: true,
  };
}

/** The file's head, in Markdown: the title and who took part. */
export function markdownHead(title: string | null, npcs: ExportedNpc[]): string {
  const who = npcs.map((n) => (n.jobTitle ? `${n.name} (${n.jobTitle})` : n.name)).join(', ');
  return `# ${title ?? 'Conversation'}\n\nWith ${who || 'no NPCs'}.\n`;
}

const quote = (t: string) =>
  t
    .trim()
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');

/** One Message in Markdown: its speaker, text as written, reasoning quoted, tools and attachments one line each. */
export function markdownMessage(
  m: Pick<Message, 'role' | 'npcName' | 'parts' | 'status' | 'error' | 'createdAt'>,
): string {
  const who = m.role === 'player' ? 'You' : (m.npcName ?? 'NPC');
  const lines = [`## ${who}`, `*${m.createdAt.toISOString()}*`];
  for (const p of m.parts as Part[]) {
    if (p.type === 'text') lines.push(p.text.trim());
    else if (p.type === 'reasoning') lines.push(`${quote(`*Thinking:* ${p.text}`)}`);
    else if (p.type === 'tool')
      lines.push(
        `- Tool \`${p.name ?? 'tool'}\`: ${p.state === 'failed' ? `failed${p.error ? ` (${p.error.split('\n')[0]})` : ''}` : p.state}`,
      );
    else if (p.type === 'file')
      lines.push(
        `- Attached file: ${p.name} (${p.mediaType}, ${p.size.toLocaleString('en')} bytes${p.missing ? `, ${p.reason ? `not kept: ${p.reason}` : 'not included in the import'}` : ''})`,
      );
    else if (p.type === 'url') lines.push(`- Attached page: [${p.title ?? p.url}](${p.url})`);
  }
  if (m.status === 'failed')
    lines.push(`*The reply failed${m.error ? `: ${m.error.trim().replace(/\.$/, '')}` : ''}.*`);
  else if (m.status === 'stopped') lines.push('*Stopped.*');
  else if (m.status === 'truncated') lines.push('*Cut at the output limit.*');
  else if (m.status === 'interrupted') lines.push('*Interrupted.*');
  return `${lines.filter(Boolean).join('\n\n')}\n`;
}
