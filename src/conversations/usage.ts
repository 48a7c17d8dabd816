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
  const key = by === 'npc' ? sql`coalesce(r.npc_id::text, r.npc_name, '')` : sql`r.conversation_id::text`;
  const label =
    by === 'npc' ? sql`coalesce(max(r.npc_name), 'An NPC')` : sql`coalesce(max(r.title), 'Untitled')`;
  const since = sql`now() - make_interval(days => ${days})`;
  // Every reply the Provider was paid for: those that exist, and those a Regenerate or a deletion removed.
  const points = await sql<UsagePoint[]>`
    with replies as (
      select m.created_at, m.npc_id, m.npc_name, c.id as conversation_id, c.title,
        m.input_tokens, m.output_tokens, m.cost_usd
      from messages m join conversations c on c.id = m.conversation_id
      where c.player_id = ${playerId} and m.role = 'npc' and not m.imported and m.created_at > ${since}
      union all
      select d.created_at, d.npc_id, d.npc_name, d.conversation_id, d.conversation_title,
        d.input_tokens, d.output_tokens, d.cost_usd
      from discarded_usage d where d.player_id = ${playerId} and d.created_at > ${since})
    select to_char(date_trunc('day', r.created_at), 'YYYY-MM-DD') as day, ${key} as key, ${label} as label,
      coalesce(sum(r.input_tokens), 0)::int as "inputTokens", coalesce(sum(r.output_tokens), 0)::int as "outputTokens",
      sum(r.cost_usd)::float8 as "costUsd", count(*)::int as replies
    from replies r
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
