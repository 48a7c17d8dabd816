import { z } from 'zod';
import type { Queryable } from '../db/index.ts';
import { AppError } from '../http/index.ts';

/** One capability an NPC may use. Grants belong to the NPC, so they are saved with it, in one transaction. */
export const GrantInput = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('sandbox') }).strict(),
  z.object({ kind: z.literal('memory') }).strict(),
  z.object({ kind: z.literal('skill'), skillId: z.uuid() }).strict(),
  z.object({ kind: z.literal('mcp'), mcpServerId: z.uuid() }).strict(),
]);
export type GrantInput = z.infer<typeof GrantInput>;
export const GrantList = z.array(GrantInput).max(50);

export type GrantKind = GrantInput['kind'];
export interface Grant {
  kind: GrantKind;
  skillId: string | null;
  mcpServerId: string | null;
}

export const toGrant = (g: GrantInput): Grant => ({
  kind: g.kind,
  skillId: 'skillId' in g ? g.skillId : null,
  mcpServerId: 'mcpServerId' in g ? g.mcpServerId : null,
});

export async function listGrants(sql: Queryable, npcId: string): Promise<Grant[]> {
  return sql<Grant[]>`select kind, skill_id as "skillId", mcp_server_id as "mcpServerId" from grants
    where npc_id = ${npcId} order by created_at, id`;
}

type Fragment = ReturnType<Queryable>;

/**
 * Whether a Skill or an MCP Server is the Player's, as a condition in the statement that writes its grant.
 * tools/ owns those tables and gives these (tools/ reads grants, so village/ may not import it: app.ts hands
 * them over).
 */
export interface GrantTargets {
  skill: (sql: Queryable, skillId: string, playerId: string) => Fragment;
  mcpServer: (sql: Queryable, mcpServerId: string, playerId: string) => Fragment;
}

/**
 * Replaces an NPC's grants inside the caller's transaction. Skills and servers must be the same Player's
 * (checked by the insert), so a refused grant rolls back everything saved with it.
 */
export async function writeGrants(
  tx: Queryable,
  targets: GrantTargets,
  playerId: string,
  npcId: string,
  grants: Grant[],
): Promise<void> {
  // One writer at a time per NPC (two saves at once would otherwise leave the union of both lists).
  await tx`select 1 from npcs where id = ${npcId} for update`;
  await tx`delete from grants where npc_id = ${npcId}`;
  const unique = new Map(grants.map((g) => [`${g.kind}:${g.skillId ?? ''}:${g.mcpServerId ?? ''}`, g]));
  for (const g of unique.values()) {
    // Each id the grant names must be the Player's (the input allows one kind, but the check holds for both).
    const theirs = tx`${g.skillId ? targets.skill(tx, g.skillId, playerId) : tx`true`}
      and ${g.mcpServerId ? targets.mcpServer(tx, g.mcpServerId, playerId) : tx`true`}`;
    const rows = await tx`
      insert into grants (npc_id, kind, skill_id, mcp_server_id)
      select ${npcId}, ${g.kind}, ${g.skillId}, ${g.mcpServerId} where ${theirs}
      on conflict do nothing returning id`;
    if (rows.length === 0 && (g.skillId || g.mcpServerId)) {
      throw new AppError('UNKNOWN_GRANT', 'That Skill or MCP Server is not one of yours.');
    }
  }
}
