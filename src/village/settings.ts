import { z } from 'zod';
import type { Queryable, Sql } from '../db/index.ts';

export interface VillageSettings {
  defaultProvider: string | null;
  defaultModel: string | null;
  hopLimit: number;
  historyBudget: number;
  /** Megabytes of files one Conversation's sandbox may hold. */
  sandboxQuotaMb: number;
  /** Spending limits: Player turns a minute, replies streaming at once, tokens a day (per Player and for the
   * whole Village), the longest Message, and how many NPCs and Conversations one Player may have. */
  turnsPerMinute: number;
  concurrentStreams: number;
  playerDailyTokens: number;
  villageDailyTokens: number;
  maxMessageChars: number;
  maxNpcs: number;
  maxConversations: number;
  /** Attachments: the largest file (MB), how many one Message may carry, what one Player may store in all
   * (MB), and the media types accepted (as sniffed from the bytes). */
  maxAttachmentMb: number;
  maxAttachmentsPerMessage: number;
  playerAttachmentMb: number;
  attachmentTypes: string[];
  /** Megabytes one Player may store in all: Messages, attachments, sandbox files and Memory (ADR 0053). */
  playerStorageMb: number;
  /** The most output tokens one Provider call may write, below the Model's own limit; null: the Model's limit. */
  maxOutputTokens: number | null;
}

/** Every media type the server can recognise and send on; an admin picks from these. */
export const ATTACHMENT_TYPES = [
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'application/pdf',
  'text/plain',
  'text/markdown',
  'text/csv',
  'application/json',
] as const;

export const VillageSettingsPatch = z
  .object({
    defaultProvider: z.string().min(1).max(64).nullable(),
    defaultModel: z.string().min(1).max(200).nullable(),
    hopLimit: z.number().int().min(0).max(100),
    historyBudget: z.number().int().min(1000).max(10_000_000),
    sandboxQuotaMb: z.number().int().min(1).max(10_000),
    turnsPerMinute: z.number().int().min(1).max(10_000),
    concurrentStreams: z.number().int().min(1).max(1000),
    playerDailyTokens: z.number().int().min(1).max(1e12),
    villageDailyTokens: z.number().int().min(1).max(1e13),
    maxMessageChars: z.number().int().min(1).max(100_000),
    maxNpcs: z.number().int().min(1).max(100_000),
    maxConversations: z.number().int().min(1).max(1_000_000),
    maxAttachmentMb: z.number().int().min(1).max(1024),
    maxAttachmentsPerMessage: z.number().int().min(1).max(100),
    playerAttachmentMb: z.number().int().min(1).max(1_000_000),
    attachmentTypes: z.array(z.enum(ATTACHMENT_TYPES)).max(ATTACHMENT_TYPES.length),
    maxOutputTokens: z.number().int().min(1).max(10_000_000).nullable(),
    playerStorageMb: z.number().int().min(1).max(10_000_000),
  })
  .partial()
  .strict();
export type VillageSettingsPatch = z.infer<typeof VillageSettingsPatch>;

export async function getVillageSettings(sql: Sql): Promise<VillageSettings> {
  const [row] = await sql<VillageSettings[]>`${settingsRow(sql)}`;
  return row!;
}

/** The settings as JSON, for a statement that reads more beside them (every field is a JSON type as it is). */
export const villageSettingsJsonSql = (q: Queryable) => q`(select to_jsonb(v) from (${settingsRow(q)}) v)`;

const settingsRow = (q: Queryable) => q`
    select default_provider as "defaultProvider", default_model as "defaultModel",
      hop_limit as "hopLimit", history_budget as "historyBudget", sandbox_quota_mb as "sandboxQuotaMb",
      turns_per_minute as "turnsPerMinute", concurrent_streams as "concurrentStreams",
      player_daily_tokens::float8 as "playerDailyTokens", village_daily_tokens::float8 as "villageDailyTokens",
      max_message_chars as "maxMessageChars", max_npcs as "maxNpcs", max_conversations as "maxConversations",
      max_attachment_mb as "maxAttachmentMb", max_attachments_per_message as "maxAttachmentsPerMessage",
      player_attachment_mb as "playerAttachmentMb", attachment_types as "attachmentTypes",
      max_output_tokens as "maxOutputTokens", player_storage_mb as "playerStorageMb"
    from village_settings where id`;

/**
 * The Village's storage quota for each Player, in bytes, as a scalar subquery of the caller's statement: storage/
 * and the spending check compare it with what a Player stores in the statement that reads that (ADR 0053).
 */
export const playerStorageQuotaSql = (q: Queryable) =>
  q`(select player_storage_mb::float8 * ${1024 * 1024} from village_settings where id)`;

export async function updateVillageSettings(
  sql: Sql,
  patch: VillageSettingsPatch,
  by: string,
): Promise<VillageSettings> {
  const current = await getVillageSettings(sql);
  const next = { ...current, ...patch };
  await sql`update village_settings set
      default_provider = ${next.defaultProvider}, default_model = ${next.defaultModel},
      hop_limit = ${next.hopLimit}, history_budget = ${next.historyBudget},
      sandbox_quota_mb = ${next.sandboxQuotaMb}, turns_per_minute = ${next.turnsPerMinute},
      concurrent_streams = ${next.concurrentStreams}, player_daily_tokens = ${next.playerDailyTokens},
      village_daily_tokens = ${next.villageDailyTokens}, max_message_chars = ${next.maxMessageChars},
      max_npcs = ${next.maxNpcs}, max_conversations = ${next.maxConversations},
      max_attachment_mb = ${next.maxAttachmentMb},
      max_attachments_per_message = ${next.maxAttachmentsPerMessage},
      player_attachment_mb = ${next.playerAttachmentMb}, attachment_types = ${[...new Set(next.attachmentTypes)]},
      max_output_tokens = ${next.maxOutputTokens}, player_storage_mb = ${next.playerStorageMb},
      updated_at = now(), updated_by = ${by}
    where id`;
  return next;
}

/**
 * Gives a Village without a default Provider one at start: the configured default, else the demo Model
 * when it is the only Provider. A default an admin has chosen is never overwritten.
 */
export async function seedVillageDefaults(sql: Sql, provider: string | undefined, model: string | undefined) {
  if (!provider || !model) return;
  await sql`update village_settings set default_provider = ${provider}, default_model = ${model}
    where id and default_provider is null`;
}
