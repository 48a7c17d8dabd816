import { tool } from 'ai';
import { z } from 'zod';
import { LOCKS, type Queryable, type Sql, transaction } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { assertStorageRoom } from '../storage/index.ts';

/** Entries one Player's Memory may hold (twenty imported lorebooks of 500). Recall searches them all. */
export const MAX_MEMORIES = 10_000;

/**
 * Adds entries to a Player's Memory, in the caller's transaction, unless that would take it past MAX_MEMORIES
 * (counted under the Player's count lock, so concurrent adds cannot overshoot) or the storage quota (ADR 0053).
 * `lorebookOf`: the NPC whose card brought them; they keep their order (clock_timestamp() rises row by row).
 */
export async function addMemories(
  tx: Queryable,
  playerId: string,
  texts: string[],
  from: { npcName?: string | null; lorebookOf?: string | null } = {},
): Promise<Memory[]> {
  await tx`select pg_advisory_xact_lock(${LOCKS.counts}, hashtext(${playerId}))`;
  const [{ n }] = (await tx`select count(*)::int as n from memories where player_id = ${playerId}`) as [
    { n: number },
  ];
  if (n + texts.length > MAX_MEMORIES)
    throw new AppError(
      'TOO_MANY_MEMORIES',
      `Your Memory holds ${n.toLocaleString('en')} entries; it may hold ${MAX_MEMORIES.toLocaleString('en')}. Delete some first.`,
    );
  const added = await tx<Memory[]>`insert into memories (player_id, text, npc_name, lorebook_of, created_at)
    select ${playerId}, t, ${from.npcName ?? null}, ${from.lorebookOf ?? null}, clock_timestamp()
    from unnest(${texts}::text[]) with ordinality as e (t, n) order by n
    returning id, text, npc_name as "npcName", created_at as "createdAt"`;
  await assertStorageRoom(tx, playerId);
  return added;
}

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
      try {
        await transaction(sql, (tx) => addMemories(tx, playerId, [text], { npcName }));
      } catch (e) {
        // Said to the Model as the tool's failure, in words it can pass on.
        if (e instanceof AppError) throw new Error(e.message);
        throw e;
      }
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
