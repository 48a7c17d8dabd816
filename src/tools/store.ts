import type { Queryable, Sql } from '../db/index.ts';
import { type GrantTargets, listGrants } from '../village/index.ts';
import type { McpServer } from './mcp.ts';
import type { Skill } from './skills.ts';

export interface GrantedTools {
  sandbox: boolean;
  memory: boolean;
  skills: Skill[];
  mcpServers: McpServer[];
}

/** What an NPC with no grant may use. */
export const NOTHING_GRANTED: GrantedTools = Object.freeze({
  sandbox: false,
  memory: false,
  skills: [],
  mcpServers: [],
});

/** What one NPC may use: its grants (village's), with the Skills and MCP Servers they name, in grant order. */
export async function grantedTools(sql: Sql, npcId: string): Promise<GrantedTools> {
  const grants = await listGrants(sql, npcId);
  const skillIds = grants.flatMap((g) => (g.kind === 'skill' && g.skillId ? [g.skillId] : []));
  const mcpIds = grants.flatMap((g) => (g.kind === 'mcp' && g.mcpServerId ? [g.mcpServerId] : []));
  // Read only when granted: most NPCs name none, and their turn pays no second round trip.
  const [skills, servers] = await Promise.all([
    skillIds.length
      ? sql<
          Skill[]
        >`select id, name, description, instructions from skills where id = any(${skillIds}::uuid[])`
      : [],
    mcpIds.length
      ? sql<(Omit<McpServer, 'headers'> & { headers: Record<string, string> | null })[]>`
          select id, name, url, headers from mcp_servers where id = any(${mcpIds}::uuid[])`
      : [],
  ]);
  const skillById = new Map(skills.map((r) => [r.id, r]));
  const serverById = new Map(servers.map((r) => [r.id, r]));
  return {
    sandbox: grants.some((g) => g.kind === 'sandbox'),
    memory: grants.some((g) => g.kind === 'memory'),
    skills: skillIds.flatMap((id) => {
      const r = skillById.get(id);
      return r ? [{ id: r.id, name: r.name, description: r.description, instructions: r.instructions }] : [];
    }),
    mcpServers: mcpIds.flatMap((id) => {
      const r = serverById.get(id);
      return r ? [{ id: r.id, name: r.name, url: r.url, headers: r.headers ?? {} }] : [];
    }),
  };
}

/** The names of a Player's Skills: a published step may name the Skill it loaded only when it is one of them. */
export async function skillNames(sql: Sql, playerId: string): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`select name from skills where player_id = ${playerId}`;
  return rows.map((r) => r.name);
}

/**
 * A grant names a Skill or MCP Server of the Player's only: the condition village/'s statement that writes the
 * grant checks (handed to it by app.ts, since village/ cannot import this room).
 */
export const grantTargets: GrantTargets = {
  skill: (sql: Queryable, skillId: string, playerId: string) =>
    sql`exists (select 1 from skills where id = ${skillId} and player_id = ${playerId})`,
  mcpServer: (sql: Queryable, mcpServerId: string, playerId: string) =>
    sql`exists (select 1 from mcp_servers where id = ${mcpServerId} and player_id = ${playerId})`,
};
