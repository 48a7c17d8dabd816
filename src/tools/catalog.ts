import type { z } from 'zod';
import { type JsonValue, LOCKS, type Sql, transaction } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { assertStorageRoom } from '../storage/index.ts';
import type { MemoryView, SkillView } from '../wire/index.ts';
import type { SkillInput } from './skills.ts';

/** Every Skill granted to an NPC is listed in its prompt at each turn: a Player has a bounded number. */
const MAX_SKILLS = 200;
/** Every MCP Server granted is asked for its tools at each turn: a Player has a bounded number. */
const MAX_MCP_SERVERS = 20;

/** What the Player keeps of their tools (Skills, Memory edits, MCP Servers): the rows behind the Tools page. */

export const listSkills = (sql: Sql, playerId: string) =>
  sql<SkillView[]>`select id, name, description, instructions from skills where player_id = ${playerId}
    order by name`;

/** A new Skill, counted under the Player's count lock (requests sent at once cannot all pass); undefined: a namesake exists. */
export function addSkill(
  sql: Sql,
  playerId: string,
  s: z.output<typeof SkillInput>,
): Promise<SkillView | undefined> {
  return transaction(sql, async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCKS.counts}, hashtext(${playerId}))`;
    const [{ n }] = (await tx`select count(*)::int as n from skills where player_id = ${playerId}`) as [
      { n: number },
    ];
    if (n >= MAX_SKILLS)
      throw new AppError(
        'TOO_MANY_SKILLS',
        `You have ${MAX_SKILLS} Skills, the most one Player can have. Delete one first.`,
      );
    const [row] = await tx<SkillView[]>`insert into skills (player_id, name, description, instructions)
      values (${playerId}, ${s.name}, ${s.description}, ${s.instructions})
      on conflict (player_id, name) do nothing returning id, name, description, instructions`;
    return row;
  });
}

// Each statement names its table, so the table-ownership lint reads them (test/structure/tables.test.ts).
export const deleteSkill = async (sql: Sql, playerId: string, id: string) =>
  (await sql`delete from skills where id = ${id} and player_id = ${playerId} returning id`).length > 0;
export const deleteMemory = async (sql: Sql, playerId: string, id: string) =>
  (await sql`delete from memories where id = ${id} and player_id = ${playerId} returning id`).length > 0;
export const deleteMcpServer = async (sql: Sql, playerId: string, id: string) =>
  (await sql`delete from mcp_servers where id = ${id} and player_id = ${playerId} returning id`).length > 0;

/** A Memory's new text; an edit that adds bytes counts against the storage quota (ADR 0053), a shorter one never fails. */
export function editMemory(
  sql: Sql,
  playerId: string,
  id: string,
  text: string,
): Promise<MemoryView | undefined> {
  return transaction(sql, async (tx) => {
    const edited = await tx<(MemoryView & { grew: boolean })[]>`
      with old as (select id, text from memories where id = ${id} and player_id = ${playerId} for update)
      update memories m set text = ${text} from old where m.id = old.id
      returning m.id, m.text, m.npc_name as "npcName", m.created_at as "createdAt",
        octet_length(m.text) > octet_length(old.text) as grew`;
    if (edited[0]?.grew) await assertStorageRoom(tx, playerId);
    const [first] = edited.map(({ grew: _, ...m }) => m);
    return first;
  });
}

/** The Player's MCP Servers; header values are secrets, so only their names leave this function. */
export async function listMcpServers(sql: Sql, playerId: string) {
  const rows = await sql<{ id: string; name: string; url: string; headers: Record<string, string> }[]>`
    select id, name, url, headers from mcp_servers where player_id = ${playerId} order by name`;
  return rows.map((r) => ({ id: r.id, name: r.name, url: r.url, headerNames: Object.keys(r.headers) }));
}

/** A new MCP Server, counted under the Player's count lock. */
export function addMcpServer(
  sql: Sql,
  playerId: string,
  body: { name: string; url: string; headers: Record<string, string> },
) {
  return transaction(sql, async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCKS.counts}, hashtext(${playerId}))`;
    const [{ count }] =
      (await tx`select count(*)::int as count from mcp_servers where player_id = ${playerId}`) as [
        { count: number },
      ];
    if (count >= MAX_MCP_SERVERS)
      throw new AppError(
        'TOO_MANY_MCP_SERVERS',
        `You have ${MAX_MCP_SERVERS} MCP Servers, the most one Player can add. Remove one first.`,
      );
    const [row] = await tx<{ id: string; name: string; url: string }[]>`
      insert into mcp_servers (player_id, name, url, headers)
      values (${playerId}, ${body.name}, ${body.url}, ${tx.json(body.headers as JsonValue)})
      returning id, name, url`;
    return { ...row!, headerNames: Object.keys(body.headers) };
  });
}
