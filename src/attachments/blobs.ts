import { createHash } from 'node:crypto';
import { finished } from 'node:stream/promises';
import { connectionLost, type Queryable, reserve, type Sql, transaction } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { avatarRefersTo } from '../village/index.ts';

/** Bytes are written and read in chunks of this size: no file is held whole to store or to serve it. */
export const CHUNK_BYTES = 1024 * 1024;

export interface WrittenBlob {
  /** The staging blob; `adoptBlob` names it by its hash (or hands back the one that already holds the bytes). */
  stagingId: string;
  sha256: Buffer;
  size: number;
}

export const tooLarge = (maxBytes: number) =>
  new AppError(
    'ATTACHMENT_TOO_LARGE',
    `A file may be at most ${formatBytes(maxBytes)}; this one is larger. Nothing was stored.`,
  );

/**
 * Streams bytes into a new staging blob, chunk by chunk, hashing as it goes. Refuses (413, and the staging blob
 * is deleted) as soon as more than `maxBytes` arrive; any failure deletes what was written.
 */
export async function writeBlob(
  sql: Sql,
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  maxBytes: number,
  onChunk?: (chunk: Uint8Array) => void,
): Promise<WrittenBlob> {
  const [staging] = await sql<{ id: string }[]>`insert into blobs default values returning id`;
  const stagingId = staging!.id;
  const hash = createHash('sha256');
  const frame = new ChunkFrame(stagingId);
  let size = 0;
  try {
    for await (const piece of source) {
      size += piece.byteLength;
      if (size > maxBytes) throw tooLarge(maxBytes);
      hash.update(piece);
      onChunk?.(piece);
      // Cut to exact chunk sizes, so a reader can tell where any byte lives.
      let rest = piece;
      while (rest.byteLength > 0) {
        rest = frame.fill(rest);
        if (frame.full) await frame.send(sql);
      }
    }
    await frame.send(sql);
  } catch (e) {
    await sql`delete from blobs where id = ${stagingId}`.catch(() => {});
    throw e;
  }
  return { stagingId, sha256: hash.digest(), size };
}

const COPY_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** The binary COPY header and the row's header before a chunk's bytes: signature, flags, extension, 3 fields. */
const HEAD = COPY_SIGNATURE.length + 4 + 4 + 2 + (4 + 16) + (4 + 4) + 4;

/**
 * One chunk as a whole binary COPY (the header, one row of three fields, the trailer), sent as one message so
 * the bytes travel as they are: a bound bytea parameter goes as a hex string twice the size, copied several
 * times while the message is built (for a 20 MB upload, hundreds of MB of garbage; see the
 * attachment_upload_20mb_rss_mb figure). The incoming bytes are copied once, into this frame, which is reused
 * for every chunk of a blob; one COPY per chunk holds a pool connection only while that chunk is written.
 */
class ChunkFrame {
  readonly #buffer = Buffer.allocUnsafe(HEAD + CHUNK_BYTES + 2);
  #length = 0;
  #idx = 0;
  constructor(blobId: string) {
    let at = COPY_SIGNATURE.copy(this.#buffer, 0);
    at = this.#buffer.writeInt32BE(0, at); // flags
    at = this.#buffer.writeInt32BE(0, at); // header extension length
    at = this.#buffer.writeInt16BE(3, at); // fields in the row
    at = this.#buffer.writeInt32BE(16, at);
    Buffer.from(blobId.replaceAll('-', ''), 'hex').copy(this.#buffer, at);
  }
  get full() {
    return this.#length === CHUNK_BYTES;
  }
  /** Takes what fits of `bytes`; returns the rest. */
  fill(bytes: Uint8Array): Uint8Array {
    const take = Math.min(bytes.byteLength, CHUNK_BYTES - this.#length);
    this.#buffer.set(bytes.subarray(0, take), HEAD + this.#length);
    this.#length += take;
    return bytes.subarray(take);
  }
  async send(sql: Sql): Promise<void> {
    if (this.#length === 0) return;
    const b = this.#buffer;
    b.writeInt32BE(4, HEAD - 12);
    b.writeInt32BE(this.#idx++, HEAD - 8);
    b.writeInt32BE(this.#length, HEAD - 4);
    b.writeInt16BE(-1, HEAD + this.#length); // the trailer
    // A COPY owns its connection until it ends: on a pool connection shared with other queries, postgres.js may
    // pipeline the next query behind it, and PostgreSQL, in copy-in mode, drops the connection ("unexpected message
    // type 0x42 during COPY", and a 500 for whoever was on it). A reserved connection has no other query.
    // Through `reserve`, so a refused reservation is told as the outage it is (503), not as a bug.
    const reserved = 'reserve' in sql && typeof sql.reserve === 'function' ? await reserve(sql) : null;
    let lost = false;
    try {
      const q = reserved ?? sql;
      const copy = await q`copy blob_chunks (blob_id, idx, data) from stdin with (format binary)`.writable();
      // postgres.js copies what is written into its message at once: the frame can be refilled after this.
      copy.end(b.subarray(0, HEAD + this.#length + 2));
      this.#length = 0;
      await finished(copy);
    } catch (e) {
      lost = connectionLost(e);
      throw e;
    } finally {
      // A connection found gone is not given back to the pool (as `transaction` does, ADR 0104).
      if (!lost) reserved?.release();
    }
  }
}

/**
 * Small contents (one chunk or less each) stored in `tx` as blobs in a few statements, content stored once: the
 * blob already holding the same bytes is used (locked against deletion until the transaction ends). Returns each
 * hash (hex) with its blob. For many small files at once (a sandbox's write-back); one file streams through
 * `writeBlob`.
 */
export async function storeSmallBlobs(
  tx: Sql,
  items: { sha256: Buffer; bytes: Buffer }[],
): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  const unique = [...new Map(items.map((i) => [i.sha256.toString('hex'), i])).values()];
  if (!unique.length) return ids;
  if (unique.some((i) => i.bytes.length > CHUNK_BYTES))
    throw new Error('storeSmallBlobs takes one chunk each.');
  const take = (rows: { id: string; sha256: Buffer }[]) => {
    for (const r of rows) ids.set(r.sha256.toString('hex'), r.id);
  };
  const lookUp = (shas: Buffer[]) =>
    tx<
      { id: string; sha256: Buffer }[]
    >`select id, sha256 from blobs where sha256 in ${tx(shas)} for key share`;
  take(await lookUp(unique.map((i) => i.sha256)));
  const missing = unique.filter((i) => !ids.has(i.sha256.toString('hex')));
  if (!missing.length) return ids;
  const made = await tx<{ id: string; sha256: Buffer }[]>`
    insert into blobs ${tx(missing.map((i) => ({ sha256: i.sha256, size: i.bytes.length })))}
    on conflict (sha256) do nothing returning id, sha256`;
  take(made);
  const bytesOf = new Map(missing.map((i) => [i.sha256.toString('hex'), i.bytes]));
  const chunks = made
    .map((r) => ({ blob_id: r.id, idx: 0, data: bytesOf.get(r.sha256.toString('hex'))! }))
    .filter((c) => c.data.length > 0);
  if (chunks.length) await tx`insert into blob_chunks ${tx(chunks)}`;
  // The same bytes stored meanwhile by someone else: theirs is used.
  const late = missing.filter((i) => !ids.has(i.sha256.toString('hex')));
  if (late.length) take(await lookUp(late.map((i) => i.sha256)));
  return ids;
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
          const used = await use(tx, found.id);
          // The copy goes after the answer: how long an upload takes does not tell whether the same bytes
          // were stored before (by anyone).
          setImmediate(() => void sql`delete from blobs where id = ${written.stagingId}`.catch(() => {}));
          return used;
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

/** What is stored of a blob besides its bytes: their sha-256 (null if never taken), size and first `head` bytes. */
export async function blobFacts(
  sql: Sql,
  blobId: string,
  head = 16,
): Promise<{ sha256: Buffer | null; size: number; head: Buffer } | undefined> {
  const [row] = await sql<{ sha256: Buffer | null; size: string; head: Buffer | null }[]>`
    select b.sha256, b.size, (select substring(c.data from 1 for ${head}) from blob_chunks c
      where c.blob_id = b.id and c.idx = 0) as head
    from blobs b where b.id = ${blobId}`;
  return row && { sha256: row.sha256, size: Number(row.size), head: row.head ?? Buffer.alloc(0) };
}

/** The blob of an NPC's avatar with these bytes' sha-256 (a published avatar is uploaded from it), or null. */
export async function avatarBlobBySha256(sql: Sql, sha256: Uint8Array): Promise<string | null> {
  const [row] = await sql<{ id: string }[]>`
    select b.id from blobs b where b.sha256 = ${Buffer.from(sha256)} and ${avatarRefersTo(sql, sql`b.id`)} limit 1`;
  return row?.id ?? null;
}

/**
 * Another room's rows that refer to blobs, as a condition in a statement over `blobs b`: true when one of them
 * names the blob `blobId` (a column of that statement). A blob is collected once nothing refers to it.
 */
export type BlobReference = (sql: Queryable, blobId: ReturnType<Queryable>) => ReturnType<Queryable>;

/**
 * The references of rooms this one may not import (tools/' sandbox files: tools/ stores its files as blobs),
 * registered once when the instance is assembled (context.ts). NPC avatars are village/'s, read directly.
 */
const registered = new Set<BlobReference>();
export function referBlobsFrom(...references: BlobReference[]): void {
  for (const r of references) registered.add(r);
}

/** `and not …` for each reference outside this room, over `b` (blobs): nothing there refers to the blob. */
function unreferenced(sql: Sql) {
  // Not registered, every collection would fail on the sandbox files' foreign key: say why instead.
  if (registered.size === 0)
    throw new Error('The rooms referring to blobs are not registered (referBlobsFrom).');
  return [...registered, avatarRefersTo].reduce(
    (conditions, refersTo) => sql`${conditions}
      and not ${refersTo(sql, sql`b.id`)}`,
    sql``,
  );
}

/**
 * Deletes the given blobs that nothing references any more. A blob an upload is adopting at this moment is
 * locked (or already referenced), so it stays: the delete then fails on the reference and is only logged.
 */
export async function collectBlobs(sql: Sql, blobIds: readonly string[]): Promise<number> {
  if (blobIds.length === 0) return 0;
  const gone = await sql`
    delete from blobs b where b.id = any(${[...new Set(blobIds)]}::uuid[]) and b.sha256 is not null
      and not exists (select 1 from attachments a where a.blob_id = b.id)${unreferenced(sql)}`;
  return gone.count;
}

/**
 * Blobs nothing references (a collection that failed on a race, say), an hour old or more, a batch at a time;
 * blobs being adopted right now are locked and skipped. Run by every server now and then.
 */
export async function sweepOrphans(sql: Sql, batch = 100): Promise<number> {
  const gone = await sql`
    delete from blobs where id in (
      select b.id from blobs b
      where b.sha256 is not null and b.created_at < now() - interval '1 hour'
        and not exists (select 1 from attachments a where a.blob_id = b.id)${unreferenced(sql)}
      limit ${batch} for update skip locked)`;
  return gone.count;
}

/** Staging blobs a crashed upload left behind (an upload in progress is younger than this: UPLOAD_TIMEOUT_MS). */
export async function sweepStaging(sql: Sql): Promise<void> {
  await sql`delete from blobs where sha256 is null and created_at < now() - interval '1 hour'`;
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${+(n / (1024 * 1024)).toFixed(1)} MB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(1)} KB`;
  return `${n} bytes`;
}
