import { createHash } from 'node:crypto';
import { type Sql, transaction } from '../db/index.ts';
import { AppError } from '../http/index.ts';

/** Bytes are written and read in chunks of this size: no file is held whole to store or to serve it. */
export const CHUNK_BYTES = 256 * 1024;

export interface WrittenBlob {
  /** The staging blob; `adoptBlob` names it by its hash (or hands back the one that already holds the bytes). */
  stagingId: string;
  sha256: Buffer;
  size: number;
}

export const tooLarge = (maxBytes: number) =>
  new AppError(
    413,
    'ATTACHMENT_TOO_LARGE',
    `A file may be at most ${formatBytes(maxBytes)}; this one is larger. Nothing was stored.`,
  );

/**
 * Streams bytes into a new staging blob, chunk by chunk, hashing as it goes. Refuses (413, and the staging blob
 * is deleted) as soon as more than `maxBytes` arrive; any failure deletes what was written.
 */
export async function writeBlob(
  sql: Sql,
  source: AsyncIterable<Uint8Array>,
  maxBytes: number,
  onChunk?: (chunk: Uint8Array) => void,
): Promise<WrittenBlob> {
  const [staging] = await sql<{ id: string }[]>`insert into blobs default values returning id`;
  const stagingId = staging!.id;
  const hash = createHash('sha256');
  let size = 0;
  let idx = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async () => {
    if (pendingBytes === 0) return;
    const data = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    await sql`insert into blob_chunks (blob_id, idx, data) values (${stagingId}, ${idx++}, ${data})`;
  };
  try {
    for await (const piece of source) {
      const chunk = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
      size += chunk.length;
      if (size > maxBytes) throw tooLarge(maxBytes);
      hash.update(chunk);
      onChunk?.(chunk);
      // Cut to exact chunk sizes, so a reader can tell where any byte lives.
      let rest = chunk;
      while (rest.length > 0) {
        const take = Math.min(rest.length, CHUNK_BYTES - pendingBytes);
        pending.push(Buffer.from(rest.subarray(0, take)));
        pendingBytes += take;
        rest = rest.subarray(take);
        if (pendingBytes === CHUNK_BYTES) await flush();
      }
    }
    await flush();
  } catch (e) {
    await sql`delete from blobs where id = ${stagingId}`.catch(() => {});
    throw e;
  }
  return { stagingId, sha256: hash.digest(), size };
}

/**
 * Names a written blob by its hash, in `use`'s transaction, and hands `use` the blob that holds the bytes: the
 * one already stored with the same hash (the staging copy is then deleted: content is stored once) or the
 * staging blob itself. The blob is locked against deletion until `use` has referenced it.
 */
export async function adoptBlob<T>(
  sql: Sql,
  written: WrittenBlob,
  use: (tx: Sql, blobId: string) => Promise<T>,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await transaction(sql, async (tx) => {
        const [found] = await tx<{ id: string }[]>`
          select id from blobs where sha256 = ${written.sha256} for key share`;
        if (found) {
          await tx`delete from blobs where id = ${written.stagingId}`;
          return use(tx, found.id);
        }
        await tx`update blobs set sha256 = ${written.sha256}, size = ${written.size} where id = ${written.stagingId}`;
        return use(tx, written.stagingId);
      });
    } catch (e) {
      // The same bytes finished uploading at the same moment elsewhere: the next attempt finds them.
      if ((e as { code?: string }).code !== '23505' || attempt > 0) {
        await sql`delete from blobs where id = ${written.stagingId}`.catch(() => {});
        throw e;
      }
    }
  }
}

/** A blob's bytes in order, one chunk at a time (a download or a Provider request reads them). */
export async function* readBlob(sql: Sql, blobId: string): AsyncGenerator<Buffer> {
  for (let idx = 0; ; idx++) {
    const [row] = await sql<{ data: Buffer }[]>`
      select data from blob_chunks where blob_id = ${blobId} and idx = ${idx}`;
    if (!row) return;
    yield row.data;
  }
}

/** A blob's bytes whole (what a Provider request carries), or its first `maxBytes`. */
export async function readBlobBytes(sql: Sql, blobId: string, maxBytes?: number): Promise<Buffer> {
  const chunks = maxBytes === undefined ? 2 ** 31 - 1 : Math.ceil(maxBytes / CHUNK_BYTES);
  const rows = await sql<{ data: Buffer }[]>`
    select data from blob_chunks where blob_id = ${blobId} and idx < ${chunks} order by idx`;
  const all = Buffer.concat(rows.map((r) => r.data));
  return maxBytes !== undefined && all.length > maxBytes ? all.subarray(0, maxBytes) : all;
}

/**
 * Deletes the given blobs that nothing references any more. A blob an upload is adopting at this moment is
 * locked (or already referenced), so it stays: the delete then fails on the reference and is only logged.
 */
export async function collectBlobs(sql: Sql, blobIds: readonly string[]): Promise<number> {
  if (blobIds.length === 0) return 0;
  const gone = await sql`
    delete from blobs b where b.id = any(${[...new Set(blobIds)]}::uuid[]) and b.sha256 is not null
      and not exists (select 1 from attachments a where a.blob_id = b.id)`;
  return gone.count;
}

/** Staging blobs a crashed upload left behind (an upload in progress is younger than this). */
export async function sweepStaging(sql: Sql): Promise<void> {
  await sql`delete from blobs where sha256 is null and created_at < now() - interval '1 hour'`;
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${+(n / (1024 * 1024)).toFixed(1)} MB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(1)} KB`;
  return `${n} bytes`;
}
