import { z } from 'zod';
import type { Fragment, JsonValue, Queryable, Sql } from '../db/index.ts';
import { LOCKS, transaction } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { checkJsonLimits } from '../json/index.ts';
import { plainName } from '../parts/index.ts';
import { GrantList } from './grants.ts';

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
  /** The card's fields (issue 29): `prompt` is its system prompt, `description` its description. */
  personality: string;
  scenario: string;
  /** The first Message of a new Conversation with this NPC; the alternates are its siblings. */
  greeting: string;
  alternateGreetings: string[];
  exampleMessages: string;
  postHistoryInstructions: string;
  creator: string;
  creatorNotes: string;
  characterVersion: string;
  tags: string[];
  /** Other front-ends' data, kept as it came and exported back. */
  extensions: Record<string, unknown>;
  /** A V3 card's fields this app has no use for, given back on export (not part of the NPC API). */
  cardExtra: Record<string, unknown>;
  /** Where its picture is served (a card's PNG), or null. */
  avatarUrl: string | null;
  /** Whether it has any grant: read only for a turn (`npcRowSql`'s `forTurn`); unknown elsewhere. */
  hasGrants?: boolean;
  /** Whether any lorebook is attached (cards' `hasBooksColumn`, handed in for a turn); unknown elsewhere. */
  hasBooks?: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * Sized for real cards (ADR 0059): SillyTavern's bundled Seraphina has a 2,851-character description and a
 * 785-character greeting; widely shared cards run to 10–30 KB of description and a dozen greetings of a few KB.
 * Every field is bounded, and so the whole NPC (well under a megabyte).
 */
export const NPC_LIMITS = {
  name: 100,
  description: 50_000,
  prompt: 50_000,
  personality: 20_000,
  scenario: 20_000,
  greeting: 20_000,
  alternateGreetings: 32,
  exampleMessages: 50_000,
  postHistoryInstructions: 20_000,
  creator: 200,
  creatorNotes: 20_000,
  characterVersion: 100,
  tags: 64,
  tag: 100,
} as const;

/** What `extensions` may hold: opaque, but counted (at most 64 KB of text in all, 16 levels deep). */
export const EXTENSION_LIMITS = { nodes: 5_000, depth: 16, items: 1_000, chars: 64_000 };
const EXTENSIONS_BYTES = 64_000;

const Extensions = z.record(z.string(), z.unknown()).superRefine((v, ctx) => {
  try {
    checkJsonLimits(v, EXTENSION_LIMITS, 'The extensions');
    if (JSON.stringify(v).length > EXTENSIONS_BYTES)
      ctx.addIssue({
        code: 'custom',
        message: `extensions may hold at most ${EXTENSIONS_BYTES} characters of JSON`,
      });
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: (e as Error).message });
  }
});

const npcFields = {
  // Shown everywhere and put in prompts: no control or bidi characters (parts/plainName.ts).
  name: z.string().max(400).transform(plainName).pipe(z.string().min(1, 'an NPC needs a name').max(100)),
  jobTitle: z.string().trim().max(100),
  description: z.string().max(NPC_LIMITS.description),
  prompt: z.string().max(NPC_LIMITS.prompt),
  provider: z.string().trim().min(1).max(64).nullable(),
  model: z.string().trim().min(1).max(200).nullable(),
  thinking: z.boolean(),
  personality: z.string().max(NPC_LIMITS.personality),
  scenario: z.string().max(NPC_LIMITS.scenario),
  greeting: z.string().max(NPC_LIMITS.greeting),
  alternateGreetings: z.array(z.string().max(NPC_LIMITS.greeting)).max(NPC_LIMITS.alternateGreetings),
  exampleMessages: z.string().max(NPC_LIMITS.exampleMessages),
  postHistoryInstructions: z.string().max(NPC_LIMITS.postHistoryInstructions),
  creator: z.string().max(NPC_LIMITS.creator),
  creatorNotes: z.string().max(NPC_LIMITS.creatorNotes),
  characterVersion: z.string().max(NPC_LIMITS.characterVersion),
  tags: z.array(z.string().max(NPC_LIMITS.tag)).max(NPC_LIMITS.tags),
  extensions: Extensions,
  /** Saved with the NPC in one transaction; left out, the grants stay as they are. */
  grants: GrantList,
};
/** The card fields' defaults: an NPC made by hand has none of them. */
export const CARD_DEFAULTS = {
  personality: '',
  scenario: '',
  greeting: '',
  alternateGreetings: [] as string[],
  exampleMessages: '',
  postHistoryInstructions: '',
  creator: '',
  creatorNotes: '',
  characterVersion: '',
  tags: [] as string[],
  extensions: {} as Record<string, unknown>,
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
    personality: npcFields.personality.default(''),
    scenario: npcFields.scenario.default(''),
    greeting: npcFields.greeting.default(''),
    alternateGreetings: npcFields.alternateGreetings.default([]),
    exampleMessages: npcFields.exampleMessages.default(''),
    postHistoryInstructions: npcFields.postHistoryInstructions.default(''),
    creator: npcFields.creator.default(''),
    creatorNotes: npcFields.creatorNotes.default(''),
    characterVersion: npcFields.characterVersion.default(''),
    tags: npcFields.tags.default([]),
    extensions: npcFields.extensions.default({}),
    grants: npcFields.grants.optional(),
  })
  .strict();
export type NpcInput = z.infer<typeof NpcInput>;

// No defaults here: a field left out of a PATCH keeps its value (zod's .partial() would keep the defaults).
export const NpcPatch = z.object(npcFields).partial().strict();
export type NpcPatch = z.infer<typeof NpcPatch>;

/** An NPC's columns, as `Npc` names them. */
const npcColumns = (sql: Queryable) => sql`
  npcs.id, npcs.player_id as "playerId", npcs.name, job_title as "jobTitle", description, prompt, provider, model,
  thinking, personality, scenario, greeting, alternate_greetings as "alternateGreetings",
  example_messages as "exampleMessages", post_history_instructions as "postHistoryInstructions", creator,
  creator_notes as "creatorNotes", character_version as "characterVersion", tags, extensions,
  card_extra as "cardExtra",
  case when avatar_blob_id is null then null
    else '/api/npcs/' || npcs.id || '/avatar?v=' || left(md5(avatar_blob_id::text), 8) end as "avatarUrl",
  npcs.created_at as "createdAt", npcs.updated_at as "updatedAt"`;
const columns = npcColumns;

/**
 * One NPC's row, as `Npc` names it, by an id the caller's statement holds: a subquery to join laterally
 * (`cross join lateral (…) n`), so a list of the caller's ids reads their NPCs in its own order, in one statement.
 */
export const npcRowSql = (q: Queryable, id: ReturnType<Queryable>, forTurn?: TurnColumns) =>
  q`select ${npcColumns(q)}${forTurn ? q`${hasGrants(q)}${forTurn.more}` : q``} from npcs where npcs.id = ${id}`;

/** An NPC read as JSON (`to_jsonb` of `npcRowSql`'s row): its dates come back as strings. */
export const npcFromJson = (n: Npc): Npc => ({
  ...n,
  createdAt: new Date(n.createdAt),
  updatedAt: new Date(n.updatedAt),
});

/**
 * What a turn reads of its NPCs beyond their rows: `hasGrants`, and `more` — other rooms' columns about the NPC
 * (each `, <expression> as "<name>"`, naming the row as `npcs`), handed in by whoever reads for the turn.
 */
export interface TurnColumns {
  more: Fragment;
}

/** For a turn: whether the NPC has any grant, so a turn of one that has none reads no grants (most NPCs). */
const hasGrants = (q: Queryable) =>
  q`, exists (select 1 from grants where grants.npc_id = npcs.id) as "hasGrants"`;

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

/** The avatar blob of each NPC that has one, by NPC id (a published session may carry it: ADR 0065). */
export async function avatarBlobIds(sql: Sql, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await sql<{ id: string; blobId: string }[]>`
    select id, avatar_blob_id as "blobId" from npcs
    where id = any(${[...ids]}::uuid[]) and avatar_blob_id is not null`;
  return new Map(rows.map((r) => [r.id, r.blobId]));
}

/** An NPC's avatar refers to the blob `blobId` (a column of the caller's statement): attachments/ keeps it. */
export const avatarRefersTo = (sql: Queryable, blobId: ReturnType<Queryable>) =>
  sql`exists (select 1 from npcs n where n.avatar_blob_id = ${blobId})`;

/**
 * A picture (a card's) becomes the NPC's avatar: the avatar it replaces, for the caller to collect once nothing
 * refers to it (null when it had none, or had this one). Run in the transaction that adopts the blob.
 */
export async function replaceAvatar(tx: Queryable, npcId: string, blobId: string): Promise<string | null> {
  const [row] = await tx<{ old: string | null }[]>`
    select avatar_blob_id as old from npcs where id = ${npcId} for update`;
  await tx`update npcs set avatar_blob_id = ${blobId} where id = ${npcId}`;
  return row?.old && row.old !== blobId ? row.old : null;
}

/** Arbitrary but fixed: the advisory lock class under which one Player's NPCs and Conversations are counted. */
export const COUNT_LOCK = LOCKS.counts;

/** Creates an NPC unless the Player already has `max` (counted under a lock per Player, so never more). */
/** What an import stores besides the NPC API's fields. */
export type NpcWrite = Omit<NpcInput, keyof typeof CARD_DEFAULTS | 'grants'> &
  Partial<Pick<NpcInput, keyof typeof CARD_DEFAULTS>> & { cardExtra?: Record<string, unknown> };

export async function createNpc(
  sql: Sql,
  playerId: string,
  input: NpcWrite,
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
export async function insertNpc(tx: Queryable, playerId: string, write: NpcWrite, max: number): Promise<Npc> {
  const input = { ...CARD_DEFAULTS, ...write };
  await tx`select pg_advisory_xact_lock(${COUNT_LOCK}, hashtext(${playerId}))`;
  const [created] = await tx<Npc[]>`
    insert into npcs (player_id, name, job_title, description, prompt, provider, model, thinking, personality,
      scenario, greeting, alternate_greetings, example_messages, post_history_instructions, creator, creator_notes,
      character_version, tags, extensions, card_extra)
    select ${playerId}, ${input.name}, ${input.jobTitle}, ${input.description}, ${input.prompt},
      ${input.provider}, ${input.model}, ${input.thinking}, ${input.personality}, ${input.scenario},
      ${input.greeting}, ${tx.json(input.alternateGreetings)}, ${input.exampleMessages},
      ${input.postHistoryInstructions}, ${input.creator}, ${input.creatorNotes}, ${input.characterVersion},
      ${tx.json(input.tags)}, ${tx.json(input.extensions as JsonValue)},
      ${tx.json((input.cardExtra ?? {}) as JsonValue)}
    where (select count(*) from npcs where player_id = ${playerId}) < ${max}
    returning ${columns(tx)}`;
  if (!created) {
    throw new AppError(
      'TOO_MANY_NPCS',
      `You have ${max.toLocaleString('en')} NPCs, the most this Village allows. Delete one to make another.`,
    );
  }
  return created;
}

export async function updateNpc(
  sql: Sql,
  playerId: string,
  id: string,
  patch: Omit<NpcPatch, 'grants'> & { cardExtra?: Record<string, unknown> },
  /** More to store with the NPC, in the same transaction (a card imported again: its lorebook). */
  also?: (tx: Queryable, npc: Npc) => Promise<void>,
): Promise<Npc | undefined> {
  const current = await getNpc(sql, playerId, id);
  if (!current) return undefined;
  const n = { ...current, ...patch };
  return transaction(sql, async (tx) => {
    const [row] = await tx<Npc[]>`
      update npcs set name = ${n.name}, job_title = ${n.jobTitle}, description = ${n.description},
        prompt = ${n.prompt}, provider = ${n.provider}, model = ${n.model}, thinking = ${n.thinking},
        personality = ${n.personality}, scenario = ${n.scenario}, greeting = ${n.greeting},
        alternate_greetings = ${tx.json(n.alternateGreetings)}, example_messages = ${n.exampleMessages},
        post_history_instructions = ${n.postHistoryInstructions}, creator = ${n.creator},
        creator_notes = ${n.creatorNotes}, character_version = ${n.characterVersion}, tags = ${tx.json(n.tags)},
        extensions = ${tx.json(n.extensions as JsonValue)}, card_extra = ${tx.json(n.cardExtra as JsonValue)},
        updated_at = now()
      where id = ${id} and player_id = ${playerId}
      returning ${columns(tx)}`;
    if (row && also) await also(tx, row);
    return row;
  });
}

export async function deleteNpc(sql: Sql, playerId: string, id: string): Promise<boolean> {
  const rows = await sql`delete from npcs where id = ${id} and player_id = ${playerId} returning id`;
  return rows.length > 0;
}
