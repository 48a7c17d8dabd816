import type { Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import type { FilePart } from '../parts/index.ts';
import { adoptBlob, formatBytes, writeBlob } from './blobs.ts';
import { ImageHead } from './dimensions.ts';
import { attachmentTokens } from './estimate.ts';
import { sniffMediaType } from './sniff.ts';
import { insertAttachment, QuotaFullError, storedBytes, toPart } from './store.ts';

/** What a file an NPC hands over may be: the Village's limits for the Player's own uploads. */
export interface KeepLimits {
  maxBytes: number;
  types: readonly string[];
  /** All the Player's attachments together (`playerAttachmentMb`). */
  playerBytes: number;
}

/** Why a file an NPC handed over was not kept, a sentence for the Player (and for the Model, for a shared one). */
export class NotKept extends Error {}

export const tooLargeToKeep = (maxBytes: number) =>
  new NotKept(`It is larger than this Village allows (${formatBytes(maxBytes)}).`);

/**
 * Keeps bytes an NPC handed the Player (a file it shared from its sandbox, a file its Model made) as an attachment
 * of the Conversation, on the terms of an upload: within the Village's size limit, of a kind it accepts (sniffed
 * from the bytes, never taken from a name or a declared type), and within the Player's space. With `messageId`, it
 * belongs to that Message at once (never a pending upload of the composer). Throws NotKept, saying why, otherwise.
 */
export async function keepFile(
  sql: Sql,
  owner: { playerId: string; conversationId: string; messageId?: string },
  file: {
    name: string;
    size: number;
    head: Uint8Array;
    bytes: AsyncIterable<Uint8Array> | Iterable<Uint8Array>;
  },
  limits: KeepLimits,
): Promise<FilePart> {
  const { name, size } = file;
  if (size > limits.maxBytes) throw tooLargeToKeep(limits.maxBytes);
  const full = () => new NotKept("The Player's attachment space is full.");
  if ((await storedBytes(sql, owner.playerId)) + size > limits.playerBytes) throw full();
  const mediaType = await sniffMediaType(file.head, name);
  if (!mediaType || !limits.types.includes(mediaType))
    throw new NotKept(`It is not a kind of file this Village keeps (${mediaType ?? 'unrecognised'}).`);
  // A picture's size, so the transcript reserves its box (read from the bytes as they are stored).
  const image = new ImageHead();
  const written = await writeBlob(sql, file.bytes, limits.maxBytes, (c) => image.push(c));
  try {
    const row = await adoptBlob(sql, written, (tx, blobId) =>
      insertAttachment(tx, {
        playerId: owner.playerId,
        conversationId: owner.conversationId,
        messageId: owner.messageId ?? null,
        blobId,
        kind: 'file',
        name,
        mediaType,
        size: written.size,
        tokens: attachmentTokens(mediaType, written.size),
        ...image.dimensions(mediaType),
        quota: limits.playerBytes,
      }),
    );
    return toPart(row) as FilePart;
  } catch (e) {
    if (e instanceof QuotaFullError) throw full();
    // The Player's whole storage (ADR 0053): its message says what to do.
    if (e instanceof AppError && e.code === 'STORAGE_FULL') throw new NotKept(e.message);
    throw e;
  }
}
