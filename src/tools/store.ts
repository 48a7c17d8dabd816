import type { Sql } from '../db/index.ts';
import type { GrantKind } from '../village/index.ts';
import type { McpServer } from './mcp.ts';
import type { Skill } from './skills.ts';

export interface GrantedTools {
  sandbox: boolean;
  memory: boolean;
  skills: Skill[];
  mcpServers: McpServer[];
}

/** What one NPC may use: its grant rows, joined to the Skills and MCP Servers they name. */
export async function grantedTools(sql: Sql, npcId: string): Promise<GrantedTools> {
  const rows = await sql<
    {
      kind: GrantKind;
      skill_id: string | null;
      name: string | null;
      description: string | null;
      instructions: string | null;
      mcp_id: string | null;
      mcp_name: string | null;
      url: string | null;
      headers: Record<string, string> | null;
    }[]
  >`
    select g.kind, s.id as skill_id, s.name, s.description, s.instructions,
      m.id as mcp_id, m.name as mcp_name, m.url, m.headers
    from grants g
    left join skills s on s.id = g.skill_id
    left join mcp_servers m on m.id = g.mcp_server_id
    where g.npc_id = ${npcId} order by g.created_at`;
  return {
    sandbox: rows.some((r) => r.kind === 'sandbox'),
    memory: rows.some((r) => r.kind === 'memory'),
    skills: rows
      .filter((r) => r.kind === 'skill' && r.skill_id)
      .map((r) => ({
        id: r.skill_id!,
        name: r.name!,
        description: r.description!,
        instructions: r.instructions!,
      })),
    mcpServers: rows
      .filter((r) => r.kind === 'mcp' && r.mcp_id)
      .map((r) => ({ id: r.mcp_id!, name: r.mcp_name!, url: r.url!, headers: r.headers ?? {} })),
  };
}

/** The names of a Player's Skills: a published step may name the Skill it loaded only when it is one of them. */
export async function skillNames(sql: Sql, playerId: string): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`select name from skills where player_id = ${playerId}`;
  return rows.map((r) => r.name);
}
