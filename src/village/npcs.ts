import { z } from 'zod';
import type { Queryable, Sql } from '../db/index.ts';
import { LOCKS, transaction } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { plainName } from '../parts/index.ts';
import { GrantList, toGrant, writeGrants } from './grants.ts';

export interface Npc {
  id: string;
  playerId: string;
  name: string;
  jobTitle: string;
  description: string;
  prompt: string;
  provider: string | null;
  model: string | null;
  thinking: boolean;
  createdAt: Date;
  updatedAt: Date;
}

const npcFields = {
  // Shown everywhere and put in prompts: no control or bidi characters (parts/plainName.ts).
  name: z.string().max(400).transform(plainName).pipe(z.string().min(1, 'an NPC needs a name').max(100)),
  jobTitle: z.string().trim().max(100),
  description: z.string().max(2000),
  prompt: z.string().max(20_000),
  provider: z.string().trim().min(1).max(64).nullable(),
  model: z.string().trim().min(1).max(200).nullable(),
  thinking: z.boolean(),
  /** Saved with the NPC in one transaction; left out, the grants stay as they are. */
  grants: GrantList,
};
export const NpcInput = z
  .object({
    ...npcFields,
    jobTitle: npcFields.jobTitle.default(''),
    description: npcFields.description.default(''),
    prompt: npcFields.prompt.default(''),
    provider: npcFields.provider.default(null),
    model: npcFields.model.default(null),
    thinking: npcFields.thinking.default(false),
    grants: npcFields.grants.optional(),
  })
  .strict();
export type NpcInput = z.infer<typeof NpcInput>;

// No defaults here: a field left out of a PATCH keeps its value (zod's .partial() would keep the defaults).
export const NpcPatch = z.object(npcFields).partial().strict();
export type NpcPatch = z.infer<typeof NpcPatch>;

const columns = (sql: Queryable) => sql`
  id, player_id as "playerId", name, job_title as "jobTitle", description, prompt, provider, model, thinking,
  created_at as "createdAt", updated_at as "updatedAt"`;

export async function listNpcs(sql: Sql, playerId: string): Promise<Npc[]> {
  return sql<Npc[]>`select ${columns(sql)} from npcs where player_id = ${playerId} order by created_at, id`;
}

/** Scoped by its Player: another Player's NPC is not found. */
export async function getNpc(sql: Sql, playerId: string, id: string): Promise<Npc | undefined> {
  const [row] = await sql<
    Npc[]
  >`select ${columns(sql)} from npcs where id = ${id} and player_id = ${playerId}`;
  return row;
}

export async function getNpcs(sql: Sql, ids: string[]): Promise<Npc[]> {
  if (ids.length === 0) return [];
  return sql<Npc[]>`select ${columns(sql)} from npcs where id = any(${ids}::uuid[])`;
}

/** Arbitrary but fixed: the advisory lock class under which one Player's NPCs and Conversations are counted. */
export const COUNT_LOCK = LOCKS.counts;

/** Creates an NPC unless the Player already has `max` (counted under a lock per Player, so never more). */
export async function createNpc(
  sql: Sql,
  playerId: string,
  input: NpcInput,
  max: number,
  /** More to store with the NPC, in the same transaction (an imported card's lorebook). */
  also?: (tx: Queryable, npc: Npc) => Promise<void>,
): Promise<Npc> {
  return transaction(sql, async (tx) => {
    const npc = await insertNpc(tx, playerId, input, max);
    if (also) await also(tx, npc);
    return npc;
  });
}

/** `createNpc` inside the caller's transaction (an imported Conversation makes its NPCs with it). */
export async function insertNpc(tx: Queryable, playerId: string, input: NpcInput, max: number): Promise<Npc> {
  await tx`select pg_advisory_xact_lock(${COUNT_LOCK}, hashtext(${playerId}))`;
  const [created] = await tx<Npc[]>`
    insert into npcs (player_id, name, job_title, description, prompt, provider, model, thinking)
    select ${playerId}, ${input.name}, ${input.jobTitle}, ${input.description}, ${input.prompt},
      ${input.provider}, ${input.model}, ${input.thinking}
    where (select count(*) from npcs where player_id = ${playerId}) < ${max}
    returning ${columns(tx)}`;
  if (!created) {
    throw new AppError(
      429,
      'TOO_MANY_NPCS',
      `You have ${max.toLocaleString('en')} NPCs, the most this Village allows. Delete one to make another.`,
    );
  }
  if (input.grants) await writeGrants(tx, playerId, created.id, input.grants.map(toGrant));
  return created;
}

export async function updateNpc(
  sql: Sql,
  playerId: string,
  id: string,
  patch: NpcPatch,
): Promise<Npc | undefined> {
  const current = await getNpc(sql, playerId, id);
  if (!current) return undefined;
  const { grants, ...fields } = patch;
  const n = { ...current, ...fields };
  return transaction(sql, async (tx) => {
    const [row] = await tx<Npc[]>`
      update npcs set name = ${n.name}, job_title = ${n.jobTitle}, description = ${n.description},
        prompt = ${n.prompt}, provider = ${n.provider}, model = ${n.model}, thinking = ${n.thinking},
        updated_at = now()
      where id = ${id} and player_id = ${playerId}
      returning ${columns(tx)}`;
    if (row && grants) await writeGrants(tx, playerId, id, grants.map(toGrant));
    return row;
  });
}

export async function deleteNpc(sql: Sql, playerId: string, id: string): Promise<boolean> {
  const rows = await sql`delete from npcs where id = ${id} and player_id = ${playerId} returning id`;
  return rows.length > 0;
}
