import type { Sql } from '../../src/db/index.ts';
import { flattenText, readParts } from '../../src/parts/index.ts';

export interface TurnRow {
  role: 'player' | 'npc';
  parts: unknown[];
}

/**
 * A Conversation written straight to the database (an NPC, its participation and the turns, a minute apart),
 * for tests about what happens to stored Conversations: publishing, reading. Returns the Message ids in order.
 */
export async function insertConversation(
  sql: Sql,
  playerId: string,
  o: {
    turns: TurnRow[];
    title?: string;
    npc?: { name: string; jobTitle?: string; description?: string; prompt?: string };
  },
): Promise<{ conversationId: string; npcId: string; ids: string[] }> {
  const npc = { jobTitle: '', description: '', prompt: '', name: 'Ada', ...o.npc };
  const [n] = await sql`insert into npcs (player_id, name, job_title, description, prompt)
    values (${playerId}, ${npc.name}, ${npc.jobTitle}, ${npc.description}, ${npc.prompt}) returning id`;
  const [c] = await sql`insert into conversations (player_id, title)
    values (${playerId}, ${o.title ?? 'A conversation'}) returning id`;
  await sql`insert into conversation_participants values (${c!.id}, ${n!.id}, 0)`;
  const base = Date.UTC(2026, 10, 1, 10);
  // Ids made here so each turn can name the one before as its parent: one path, as a real Conversation.
  const ids = o.turns.map(() => crypto.randomUUID());
  const rows = o.turns.map((t, i) => ({
    id: ids[i]!,
    parent_id: i > 0 ? ids[i - 1]! : null,
    conversation_id: c!.id as string,
    role: t.role,
    npc_id: t.role === 'npc' ? (n!.id as string) : null,
    npc_name: t.role === 'npc' ? npc.name : null,
    parts: sql.json(t.parts as never),
    text: flattenText(readParts(t.parts)),
    provider: t.role === 'npc' ? 'fake' : null,
    model: t.role === 'npc' ? 'fake-model' : null,
    created_at: new Date(base + i * 60_000),
  }));
  // One statement per 500 turns; seq (bigserial) keeps insertion order, which is reading order.
  for (let i = 0; i < rows.length; i += 500) await sql`insert into messages ${sql(rows.slice(i, i + 500))}`;
  return { conversationId: c!.id as string, npcId: n!.id as string, ids };
}
