import { tool } from 'ai';
import { z } from 'zod';
import type { Sql } from '../db/index.ts';

export interface Memory {
  id: string;
  text: string;
  npcName: string | null;
  createdAt: Date;
}

/** The `remember` tool: writes to the Player's Memory, which outlives the Conversation. */
export function rememberTool(sql: Sql, playerId: string, npcName: string) {
  return tool({
    description: "Save a fact to the Player's long-term Memory, to be recalled in later conversations.",
    inputSchema: z.object({
      text: z.string().min(1).max(2000).describe('The fact to remember, in one or two sentences.'),
    }),
    execute: async ({ text }) => {
      await sql`insert into memories (player_id, text, npc_name) values (${playerId}, ${text}, ${npcName})`;
      return { remembered: text };
    },
  });
}

/**
 * Memory recalled from the Player's question before the turn (seed 003, step 5): full-text search where any
 * word may match, best first, within a size budget.
 */
export async function recallMemory(
  sql: Sql,
  playerId: string,
  question: string,
  budgetChars = 1500,
): Promise<string[]> {
  // Any word of the question may match (plainto_tsquery alone would demand all of them).
  const rows = await sql<{ text: string }[]>`
    with q as (select replace(plainto_tsquery('english', ${question})::text, '&', '|')::tsquery as q)
    select text from memories, q
    where player_id = ${playerId} and numnode(q.q) > 0 and tsv @@ q.q
    order by ts_rank(tsv, q.q) desc, created_at desc limit 20`;
  const out: string[] = [];
  let used = 0;
  for (const { text } of rows) {
    if (used + text.length > budgetChars) break;
    out.push(text);
    used += text.length;
  }
  return out;
}

export async function listMemories(sql: Sql, playerId: string): Promise<Memory[]> {
  return sql<Memory[]>`select id, text, npc_name as "npcName", created_at as "createdAt" from memories
    where player_id = ${playerId} order by created_at desc limit 500`;
}
