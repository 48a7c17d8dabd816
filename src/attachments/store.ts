import { LOCKS, type Queryable, type Sql } from '../db/index.ts';
import type { AttachmentPart } from '../parts/index.ts';
import { assertStorageRoom } from '../storage/index.ts';
import { collectBlobs } from './blobs.ts';

export interface AttachmentRow {
  id: string;
  playerId: string;
  conversationId: string;
  messageId: string | null;
  blobId: string;
  kind: 'file' | 'url';
  name: string;
  mediaType: string;
  size: number;
  tokens: number;
  url: string | null;
  title: string | null;
  /** A picture's size in pixels, read from its header at upload (null: not a picture, or not readable). */
  width: number | null;
  height: number | null;
}

const columns = (sql: Sql) => sql`
  id, player_id as "playerId", conversation_id as "conversationId", message_id as "messageId",
  blob_id as "blobId", kind, name, media_type as "mediaType", size::float8 as size, tokens, url, title, width,
  height`;

/** An attachment past what the Player may store; `room` is what was left. Nothing was stored. */
export class QuotaFullError extends Error {
  constructor(readonly room: number) {
    super('The attachment space is full.');
  }
}

/**
 * Records an attachment. With `quota` (bytes the Player may store), it is counted in the same statement under
 * the Player's lock — the caller's transaction — so uploads finishing at once cannot each take the last room —
 * and refused (STORAGE_FULL) when it takes the Player past the storage quota.
 */
export async function insertAttachment(
  sql: Sql,
  a: Omit<AttachmentRow, 'id' | 'messageId' | 'url' | 'title' | 'width' | 'height'> & {
    messageId?: string | null;
    url?: string | null;
    title?: string | null;
    width?: number | null;
    height?: number | null;
    quota?: number;
  },
): Promise<AttachmentRow> {
  if (a.quota !== undefined)
    await sql`select pg_advisory_xact_lock(${LOCKS.attachmentQuota}, hashtext(${a.playerId}))`;
  const [row] = await sql<AttachmentRow[]>`
    insert into attachments (player_id, conversation_id, message_id, blob_id, kind, name, media_type, size, tokens,
      url, title, width, height)
    select ${a.playerId}, ${a.conversationId}, ${a.messageId ?? null}, ${a.blobId}, ${a.kind}, ${a.name},
      ${a.mediaType}, ${a.size}, ${a.tokens}, ${a.url ?? null}, ${a.title ?? null}, ${a.width ?? null},
      ${a.height ?? null}
    where ${a.quota === undefined} or (select coalesce(sum(size), 0) from attachments
      where player_id = ${a.playerId}) + ${a.size} <= ${a.quota ?? 0}
    returning ${columns(sql)}`;
  if (!row) throw new QuotaFullError((a.quota ?? 0) - (await storedBytes(sql, a.playerId)));
  // A Player's own upload or share also counts against everything the Player stores (ADR 0053).
  if (a.quota !== undefined) await assertStorageRoom(sql, a.playerId);
  return row;
}

/** One of the Player's own attachments; another Player's is not found (never "forbidden": no probing). */
export async function getAttachment(
  sql: Sql,
  playerId: string,
  id: string,
): Promise<AttachmentRow | undefined> {
  const [row] = await sql<AttachmentRow[]>`
    select ${columns(sql)} from attachments where id = ${id} and player_id = ${playerId}`;
  return row;
}

/**
 * The blobs a Conversation's attachments hold, as a subquery: a statement deleting the Conversation reads them
 * before its cascade takes the rows, then collects them (conversations/store.ts).
 */
export const conversationBlobsSql = (q: Queryable, conversationId: ReturnType<Queryable>) =>
  q`select blob_id from attachments where conversation_id = ${conversationId}`;

/** Which blob holds each of `ids` still stored in this Conversation (a turn reads what its history names). */
export async function blobsOf(sql: Sql, conversationId: string, ids: string[]): Promise<Map<string, string>> {
  const rows = await sql<{ id: string; blobId: string }[]>`
    select id, blob_id as "blobId" from attachments
    where id = any(${ids}::uuid[]) and conversation_id = ${conversationId}`;
  return new Map(rows.map((r) => [r.id, r.blobId]));
}

/** The Player's uploads to this Conversation not yet sent, among `ids` (a Message names them to send them). */
export async function pendingAttachments(
  sql: Sql,
  playerId: string,
  conversationId: string,
  ids: readonly string[],
): Promise<AttachmentRow[]> {
  if (ids.length === 0) return [];
  return sql<AttachmentRow[]>`
    select ${columns(sql)} from attachments
    where id = any(${[...ids]}::uuid[]) and player_id = ${playerId} and conversation_id = ${conversationId}
      and message_id is null`;
}

/**
 * Hands the Message `messageId` (a fragment: the caller's statement may write the Message too) the Conversation's
 * attachments among `ids` that no Message has yet, when `when` holds. A statement, or the body of a caller's CTE:
 * the Player's Message and its uploads are written in one statement (conversations/turnStore.ts).
 */
export const linkToMessageSql = (
  q: Queryable,
  conversationId: string,
  ids: readonly string[],
  messageId: ReturnType<Queryable>,
  when: ReturnType<Queryable> = q`true`,
) => q`
  update attachments set message_id = ${messageId}
  where id = any(${[...ids]}::uuid[]) and conversation_id = ${conversationId} and message_id is null and ${when}`;

/** Files an NPC shared in a reply belong to it: deleting or regenerating the reply takes them along. */
export async function linkShared(sql: Queryable, conversationId: string, messageId: string, ids: string[]) {
  await sql`${linkToMessageSql(sql, conversationId, ids, sql`${messageId}::uuid`)}`;
}

export async function countPending(sql: Sql, conversationId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from attachments where conversation_id = ${conversationId} and message_id is null`;
  return row!.n;
}

/** Bytes the Player's attachments take (each use counted: what one Player may fill is bounded either way). */
export async function storedBytes(sql: Sql, playerId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select coalesce(sum(size), 0)::float8 as n from attachments where player_id = ${playerId}`;
  return row!.n;
}

/** A page this Player attached in the last hour, whose text is reused instead of fetching it again. */
export async function recentPage(
  sql: Sql,
  playerId: string,
  url: string,
): Promise<AttachmentRow | undefined> {
  const [row] = await sql<AttachmentRow[]>`
    select ${columns(sql)} from attachments
    where player_id = ${playerId} and kind = 'url' and url = ${url} and created_at > now() - interval '1 hour'
    order by created_at desc limit 1`;
  return row;
}

/** Removes an upload the Player has not sent (the chip's ×); its blob goes when nothing else uses it. */
export async function deletePending(sql: Sql, playerId: string, id: string): Promise<boolean> {
  const rows = await sql<{ blobId: string }[]>`
    delete from attachments where id = ${id} and player_id = ${playerId} and message_id is null
    returning blob_id as "blobId"`;
  if (rows.length)
    await collectBlobs(
      sql,
      rows.map((r) => r.blobId),
    );
  return rows.length > 0;
}

/**
 * Uploads left unsent for a day are abandoned: removed (a batch at a time), with their blobs when nothing else
 * uses them. Run by every server now and then, not by requests.
 */
export async function sweepAbandoned(sql: Sql, batch = 500): Promise<void> {
  const rows = await sql<{ blobId: string }[]>`
    delete from attachments where id in (
      select id from attachments where message_id is null and created_at < now() - interval '1 day'
      limit ${batch} for update skip locked)
    returning blob_id as "blobId"`;
  if (rows.length)
    await collectBlobs(
      sql,
      rows.map((r) => r.blobId),
    );
}

/** An attachment as the Part a Message carries. */
export function toPart(a: AttachmentRow): AttachmentPart {
  return a.kind === 'url'
    ? {
        type: 'url',
        id: a.id,
        url: a.url ?? '',
        ...(a.title ? { title: a.title } : {}),
        size: a.size,
        tokens: a.tokens,
      }
    : {
        type: 'file',
        id: a.id,
        name: a.name,
        mediaType: a.mediaType,
        size: a.size,
        tokens: a.tokens,
        ...(a.width && a.height ? { width: a.width, height: a.height } : {}),
      };
}
