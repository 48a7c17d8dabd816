import type { Queryable } from '../db/index.ts';
import {
  flattenText,
  type Part,
  plainName,
  readParts,
  settleRunningTools,
  stripMarkdown,
  unfinishedCall,
} from '../parts/index.ts';

/** `truncated`: the Provider cut the reply at its output limit; what came is kept (issue 27). */
export type MessageStatus = 'streaming' | 'complete' | 'truncated' | 'stopped' | 'failed' | 'interrupted';

export interface Usage {
  inputTokens: number | null;
  outputTokens: number | null;
  reasoningTokens: number | null;
  cachedInputTokens: number | null;
}

export interface Message {
  id: string;
  seq: string;
  role: 'player' | 'npc';
  npcId: string | null;
  npcName: string | null;
  parts: Part[];
  text: string;
  status: MessageStatus;
  error: string | null;
  provider: string | null;
  model: string | null;
  usage: Usage | null;
  costUsd: number | null;
  createdAt: Date;
  /** The Message this one follows in the Conversation tree (null: a first Message). */
  parentId: string | null;
  /** Where it stands among its siblings (same parent): where the transcript offers "‹ 2/3 ›". */
  branch?: Branch;
}

/** A Message's place among its siblings, oldest first: its 0-based index, how many, and its two neighbours. */
export interface Branch {
  index: number;
  count: number;
  previous: string | null;
  next: string | null;
}

export interface MessageRow {
  id: string;
  seq: string;
  role: 'player' | 'npc';
  npc_id: string | null;
  npc_name: string | null;
  parts: unknown;
  text: string;
  status: MessageStatus;
  error: string | null;
  provider: string | null;
  model: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  reasoning_tokens: number | null;
  cached_input_tokens: number | null;
  cost_usd: number | null;
  created_at: Date;
  parent_id: string | null;
  branch_index?: number;
  branch_count?: number;
  branch_previous?: string | null;
  branch_next?: string | null;
}

/** The columns a `MessageRow` is read from. */
export const messageColumns = (sql: Queryable) => sql`
  id, seq::text as seq, role, npc_id, npc_name, parts, text, status, error, provider, model,
  input_tokens, output_tokens, reasoning_tokens, cached_input_tokens, cost_usd, created_at, parent_id`;

/** A stored row as the API shows it. Rows written before Parts existed read as one text Part. */
export function toMessage(row: MessageRow): Message {
  const parts =
    row.parts == null ? (row.text ? [{ type: 'text' as const, text: row.text }] : []) : readParts(row.parts);
  const hasUsage = [row.input_tokens, row.output_tokens, row.reasoning_tokens, row.cached_input_tokens].some(
    (n) => n != null,
  );
  return {
    id: row.id,
    seq: row.seq,
    role: row.role,
    npcId: row.npc_id,
    npcName: row.npc_name,
    parts,
    text: row.text,
    status: row.status,
    error: row.error,
    provider: row.provider,
    model: row.model,
    usage: hasUsage
      ? {
          inputTokens: row.input_tokens,
          outputTokens: row.output_tokens,
          reasoningTokens: row.reasoning_tokens,
          cachedInputTokens: row.cached_input_tokens,
        }
      : null,
    costUsd: row.cost_usd,
    createdAt: row.created_at,
    parentId: row.parent_id,
    ...(row.branch_count != null
      ? {
          branch: {
            index: row.branch_index ?? 0,
            count: row.branch_count,
            previous: row.branch_previous ?? null,
            next: row.branch_next ?? null,
          },
        }
      : {}),
  };
}

/** What a reply looks like when it ends other than cleanly: calls still running are settled as failed. */
export function settle(
  parts: Part[],
  status: Exclude<MessageStatus, 'streaming'>,
): { parts: Part[]; text: string } {
  const settled = settleRunningTools(parts, unfinishedCall(status));
  return { parts: settled, text: flattenText(settled) };
}

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * A Conversation's title from the Player's first Message: at most 80 characters (graphemes) on one line, cut
 * at a word boundary with "…" when the Message is longer (a word is split only when it alone is too long).
 */
export function titleFrom(text: string, max = 80): string {
  const line = plainName(stripMarkdown(text.slice(0, 4 * max + 400)))
    .replace(/\s+/g, ' ')
    .trim();
  // Only the first max + 1 graphemes are looked at: a Message may be 100,000 characters long.
  const graphemes: string[] = [];
  for (const s of segmenter.segment(line)) {
    graphemes.push(s.segment);
    if (graphemes.length > max) break;
  }
  if (graphemes.length <= max) return line;
  const head = graphemes.slice(0, max - 1);
  // The head ends on a whole word when the next character is a space; else back to the last space in it.
  const space = graphemes[max - 1] === ' ' ? head.length : head.lastIndexOf(' ');
  const cut = space > max / 2 ? head.slice(0, space) : head;
  return `${cut.join('').trimEnd()}…`;
}
