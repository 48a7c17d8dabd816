import type { Queryable } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { playerStorageQuotaSql } from '../village/index.ts';

const MB = 1024 * 1024;

/** What one Player stores, in bytes, by kind, and the Village's quota for each Player. */
export interface StorageUse {
  messages: number;
  attachments: number;
  sandbox: number;
  memory: number;
  used: number;
  quota: number;
}

/** The Player's bytes stored in all, as a scalar subquery (0 for a Player who has stored nothing). */
export const storedSql = (q: Queryable, playerId: string) => q`
  (select coalesce((select message_bytes + attachment_bytes + sandbox_bytes + memory_bytes
    from player_storage where player_id = ${playerId}), 0)::float8)`;

/** The Village's quota for one Player, in bytes, as a scalar subquery (a Village setting: village/'s). */
export const storageQuotaSql = (q: Queryable) => playerStorageQuotaSql(q);

/**
 * What the Player stores now. Read after a write in the write's transaction, it counts that write and every
 * committed one: the triggers' update holds the Player's row until commit, so writes check one after another.
 */
export async function storageUse(q: Queryable, playerId: string): Promise<StorageUse> {
  const [row] = await q<Omit<StorageUse, 'used'>[]>`
    select coalesce(s.message_bytes, 0)::float8 as messages, coalesce(s.attachment_bytes, 0)::float8 as attachments,
      coalesce(s.sandbox_bytes, 0)::float8 as sandbox, coalesce(s.memory_bytes, 0)::float8 as memory,
      ${storageQuotaSql(q)} as quota
    from (select 1) one left join player_storage s on s.player_id = ${playerId}`;
  const r = row!;
  return { ...r, used: r.messages + r.attachments + r.sandbox + r.memory };
}

export function formatStorage(n: number): string {
  if (n >= MB) return `${+(n / MB).toFixed(1)} MB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(1)} KB`;
  return `${n} bytes`;
}

/** The refusal: 507 STORAGE_FULL, with what is used and what to delete. */
export function storageFull(u: Pick<StorageUse, 'used' | 'quota'>): AppError {
  return new AppError(
    'STORAGE_FULL',
    `Your storage is full: you store ${formatStorage(u.used)} of the ${formatStorage(u.quota)} this Village allows each Player. Delete Conversations, attachments, sandbox files or Memory you no longer need (the Usage page shows what takes the space), then try again. Nothing was stored.`,
    { details: { used: u.used, quota: u.quota } },
  );
}

/**
 * Refuses (throws STORAGE_FULL, rolling the caller's transaction back) when the Player stores more than the
 * quota. Call it after the write, in the write's transaction: the write's own bytes are then counted.
 */
export async function assertStorageRoom(tx: Queryable, playerId: string): Promise<void> {
  const u = await storageUse(tx, playerId);
  if (u.used > u.quota) throw storageFull(u);
}

/**
 * Runs `insert` (a new Conversation's Messages, written in many statements) with the Messages' counting deferred,
 * then counts them in one statement and checks the quota: the Player's row is held from then to commit only, not
 * for the whole import (the triggers' row lock would otherwise hold every checkpoint of the Player's replies).
 */
export async function withMessagesCountedAtEnd<T>(
  tx: Queryable,
  playerId: string,
  /** The new Messages' bytes, as a scalar subquery (conversations/' table, summed by that room). */
  messageBytes: ReturnType<Queryable>,
  insert: () => Promise<T>,
): Promise<T> {
  await tx`select set_config('agentsville.defer_message_storage', 'on', true)`;
  const out = await insert();
  await tx`select set_config('agentsville.defer_message_storage', 'off', true)`;
  await tx`select storage_add(jsonb_build_array(jsonb_build_object('player_id', ${playerId}::uuid,
    'm', ${messageBytes}, 'a', 0, 's', 0, 'r', 0)))`;
  await assertStorageRoom(tx, playerId);
  return out;
}

/** Bytes the Player may still store (0 when full): what their sandbox may add. One statement. */
export async function storageRoom(q: Queryable, playerId: string): Promise<number> {
  const [row] = await q<{ room: number }[]>`
    select greatest(0, ${storageQuotaSql(q)} - ${storedSql(q, playerId)})::float8 as room`;
  return row?.room ?? 0;
}
