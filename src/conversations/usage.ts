import type { Sql } from '../db/index.ts';

export interface UsagePoint {
  day: string;
  key: string;
  label: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
  replies: number;
}

/** A Player's usage per day, per NPC or per Conversation, over the last `days` days. */
export async function usageByDay(sql: Sql, playerId: string, by: 'npc' | 'conversation', days: number) {
  const key = by === 'npc' ? sql`coalesce(m.npc_id::text, m.npc_name)` : sql`c.id::text`;
  const label = by === 'npc' ? sql`max(m.npc_name)` : sql`coalesce(max(c.title), 'Untitled')`;
  const points = await sql<UsagePoint[]>`
    select to_char(date_trunc('day', m.created_at), 'YYYY-MM-DD') as day, ${key} as key, ${label} as label,
      coalesce(sum(m.input_tokens), 0)::int as "inputTokens", coalesce(sum(m.output_tokens), 0)::int as "outputTokens",
      sum(m.cost_usd)::float8 as "costUsd", count(*)::int as replies
    from messages m join conversations c on c.id = m.conversation_id
    where c.player_id = ${playerId} and m.role = 'npc' and m.created_at > now() - make_interval(days => ${days})
    group by 1, 2 order by 1, 3`;
  const totals = points.reduce(
    (t, p) => ({
      inputTokens: t.inputTokens + p.inputTokens,
      outputTokens: t.outputTokens + p.outputTokens,
      costUsd: p.costUsd == null ? t.costUsd : (t.costUsd ?? 0) + p.costUsd,
      replies: t.replies + p.replies,
    }),
    { inputTokens: 0, outputTokens: 0, costUsd: null as number | null, replies: 0 },
  );
  return { points, totals };
}
