import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  adoptBlob,
  type BlobReference,
  collectBlobs,
  readBlob,
  storeSmallBlobs,
  writeBlob,
} from '../../attachments/index.ts';
import { type Queryable, type Sql, transaction } from '../../db/index.ts';
import { storageRoom } from '../../storage/index.ts';

/**
 * The blobs a Conversation's sandbox files hold, as a subquery: a statement deleting the Conversation reads them
 * before its cascade takes the rows, then collects them (conversations/store.ts).
 */
export const sandboxBlobsSql = (q: Queryable, conversationId: ReturnType<Queryable>) =>
  q`select blob_id from sandbox_files where conversation_id = ${conversationId} and blob_id is not null`;

/**
 * A sandbox file refers to the blob `blobId` (a column of the caller's statement): attachments/ collects a blob
 * only once nothing refers to it, and is handed this at assembly (context.ts: attachments/ may not import tools/).
 */
export const sandboxFileRefersTo: BlobReference = (sql, blobId) =>
  sql`exists (select 1 from sandbox_files s where s.blob_id = ${blobId})`;

/** Files one command may change (each is a blob and a row to write back); more and its changes are undone. */
export const MAX_WRITE_BACK_FILES = 1000;
/** Small files and folders are written back this many at a time, in a few statements per batch. */
const BATCH = 100;
const SMALL_FILE = 64 * 1024;

/** A write-back refused for its size: the command's changes were undone. */
export class WriteBackTooLargeError extends Error {}

/** What the working copy held when it last matched PostgreSQL: each file's size, mtime and content hash. */
interface Manifest {
  version: number;
  files: Record<string, { size: number; mtimeMs: number; sha256: string } | 'dir'>;
}

/**
 * A Conversation's sandbox files in PostgreSQL (issue 17: no state on one machine's disk). Commands still run
 * over a working copy on this instance's disk; before a command the copy is replaced when PostgreSQL holds a
 * newer version (another instance ran the last one), and after it what changed is written back, new content
 * as blobs, and the version bumped. Two instances never run commands for one Conversation at once: a turn
 * claims its Conversation (ADR 0020), and one instance runs one command per folder at a time.
 */
/**
 * Whether a Conversation exists, as a condition of a statement: conversations/ owns them and imports this room,
 * so it is handed in (conversations' `conversationExistsSql`, through the turn's ToolContext).
 */
export type ConversationExistsSql = (q: Queryable, conversationId: string) => ReturnType<Queryable>;

export class SandboxStore {
  constructor(
    private readonly sql: Sql,
    private readonly conversationId: string,
    private readonly root: string,
    private readonly conversationExists: ConversationExistsSql,
    /** The Player whose Conversation this is: the sandbox's room is their storage quota's. */
    private readonly playerId: string,
  ) {}

  get #manifestPath() {
    return `${this.root}.manifest.json`;
  }

  async #manifest(): Promise<Manifest | undefined> {
    try {
      const m = JSON.parse(await readFile(this.#manifestPath, 'utf8')) as Manifest;
      // A file may be named __proto__ or toString: the map has no prototype to collide with.
      return { version: m.version, files: Object.assign(Object.create(null), m.files) };
    } catch {
      return undefined;
    }
  }

  #pulling: Promise<void> | undefined;

  /**
   * Brings the working copy up to PostgreSQL's version (a no-op when it is current). One at a time: a command
   * and a `share_file` called together share the one pull.
   */
  pull(): Promise<void> {
    this.#pulling ??= this.#pull().finally(() => {
      this.#pulling = undefined;
    });
    return this.#pulling;
  }

  async #pull(): Promise<void> {
    const [row] = await this.sql<{ version: string | null; alive: boolean }[]>`
      select (select version::text from sandbox_versions where conversation_id = ${this.conversationId}) as version,
        ${this.conversationExists(this.sql, this.conversationId)} as alive`;
    // A Conversation deleted meanwhile (through any instance): its copy goes, and nothing is made again.
    if (!row?.alive) {
      await rm(this.root, { recursive: true, force: true });
      await rm(this.#manifestPath, { force: true });
      throw new Error('This Conversation has been deleted.');
    }
    const version = Number(row.version ?? 0);
    const local = await this.#manifest();
    if (local?.version === version) return;
    // A folder from before sandboxes were stored here, and nothing stored yet: the folder is the truth.
    if (!local && version === 0) return this.push(undefined, { files: Infinity, bytes: Infinity });
    await rm(this.root, { recursive: true, force: true });
    await mkdir(this.root, { recursive: true });
    const rows = await this.sql<{ path: string; blobId: string | null }[]>`
      select path, blob_id as "blobId" from sandbox_files where conversation_id = ${this.conversationId}
      order by path`;
    const files: Manifest['files'] = Object.create(null);
    for (const r of rows) {
      const full = this.#inside(r.path);
      if (!r.blobId) {
        await mkdir(full, { recursive: true });
        files[r.path] = 'dir';
        continue;
      }
      await mkdir(path.dirname(full), { recursive: true });
      await pipeline(Readable.from(readBlob(this.sql, r.blobId)), createWriteStream(full));
      const s = await stat(full);
      files[r.path] = { size: s.size, mtimeMs: s.mtimeMs, sha256: await hashOf(full) };
    }
    await this.#save({ version, files });
  }

  /** Bytes the Conversation's Player may still store (the storage quota, ADR 0053). */
  room(): Promise<number> {
    return storageRoom(this.sql, this.playerId);
  }

  /**
   * Writes back what the last command changed, and bumps the version (a no-op when nothing changed). At most
   * `limits.files` changed files and `limits.bytes` of them: past either the working copy goes back to what is
   * stored and nothing is written. `signal` stops it between files (the command's time limit, or Stop): what
   * is not written yet stays in the working copy, and the next write-back takes it.
   */
  async push(
    signal?: AbortSignal,
    limits: { files: number; bytes: number } = {
      files: MAX_WRITE_BACK_FILES,
      bytes: Number.MAX_SAFE_INTEGER,
    },
  ): Promise<void> {
    signal?.throwIfAborted();
    const before = (await this.#manifest()) ?? { version: 0, files: Object.create(null) };
    const now = await this.#scan(before, signal);
    const changed = Object.entries(now.files).filter(([p, f]) => !same(before.files[p], f));
    const removed = Object.keys(before.files).filter((p) => !Object.hasOwn(now.files, p));
    if (!changed.length && !removed.length) return;
    const bytes = changed.reduce((sum, [, f]) => sum + (f === 'dir' ? 0 : f.size), 0);
    if (changed.length > limits.files || bytes > limits.bytes) {
      await this.#undo();
      throw new WriteBackTooLargeError(
        `The command changed ${changed.length.toLocaleString('en')} files (${Math.ceil(bytes / 1_048_576)} MB); one command may change at most ${limits.files.toLocaleString('en')} files and ${Math.round(limits.bytes / 1_048_576)} MB. Its changes were undone.`,
      );
    }
    const dropped: string[] = [];
    // Folders and small files in batches, a transaction each; a large file streamed in as a blob of its own.
    const small = changed.filter(([, f]) => f === 'dir' || f.size <= SMALL_FILE);
    for (let i = 0; i < small.length; i += BATCH) {
      signal?.throwIfAborted();
      await this.#writeBatch(small.slice(i, i + BATCH), dropped);
    }
    for (const [p, f] of changed) {
      if (f === 'dir' || f.size <= SMALL_FILE) continue;
      signal?.throwIfAborted();
      const written = await writeBlob(this.sql, createReadStream(this.#inside(p)), Number.MAX_SAFE_INTEGER);
      await adoptBlob(this.sql, written, (tx, blobId) => this.#upsert(tx, [{ path: p, blobId }], dropped));
    }
    signal?.throwIfAborted();
    const version = await transaction(this.sql, async (tx) => {
      const gone = await tx<{ blobId: string | null }[]>`
        delete from sandbox_files where conversation_id = ${this.conversationId} and path = any(${removed}::text[])
        returning blob_id as "blobId"`;
      for (const g of gone) if (g.blobId) dropped.push(g.blobId);
      const [v] = await tx<{ version: string }[]>`
        insert into sandbox_versions (conversation_id, version) values (${this.conversationId}, 1)
        on conflict (conversation_id) do update set version = sandbox_versions.version + 1
        returning version::text`;
      return Number(v!.version);
    });
    await this.#save({ version, files: now.files });
    await collectBlobs(this.sql, dropped).catch(() => {});
  }

  /** Folders and small files, their content read now, stored in one transaction with their rows. */
  async #writeBatch(batch: [string, Manifest['files'][string]][], dropped: string[]) {
    const items = await Promise.all(
      batch.map(async ([p, f]) => {
        if (f === 'dir') return { path: p, bytes: null };
        const bytes = await readFile(this.#inside(p));
        return { path: p, bytes, sha256: createHash('sha256').update(bytes).digest() };
      }),
    );
    await transaction(this.sql, async (tx) => {
      const files = items.filter((i) => i.bytes !== null) as {
        path: string;
        bytes: Buffer;
        sha256: Buffer;
      }[];
      const ids = await storeSmallBlobs(tx, files);
      await this.#upsert(
        tx,
        items.map((i) => ({
          path: i.path,
          blobId: i.bytes === null ? null : ids.get((i as { sha256: Buffer }).sha256.toString('hex'))!,
        })),
        dropped,
      );
    });
  }

  /** Rows for `files`, the blobs they held before noted in `dropped` (collected once nothing names them). */
  async #upsert(tx: Sql, files: { path: string; blobId: string | null }[], dropped: string[]) {
    const old = await tx<{ path: string; blobId: string | null }[]>`
      select path, blob_id as "blobId" from sandbox_files
      where conversation_id = ${this.conversationId} and path in ${tx(files.map((f) => f.path))} for update`;
    const next = new Map(files.map((f) => [f.path, f.blobId]));
    for (const o of old) if (o.blobId && o.blobId !== next.get(o.path)) dropped.push(o.blobId);
    await tx`insert into sandbox_files ${tx(
      files.map((f) => ({ conversation_id: this.conversationId, path: f.path, blob_id: f.blobId })),
    )} on conflict (conversation_id, path) do update set blob_id = excluded.blob_id`;
  }

  /** The working copy back to what PostgreSQL holds: the next pull fetches it whole. */
  async #undo() {
    await rm(this.root, { recursive: true, force: true });
    await rm(this.#manifestPath, { force: true });
    await mkdir(this.root, { recursive: true });
  }

  /** The working copy as it stands; a file's hash is reused when its size and mtime did not change. */
  async #scan(before: Manifest, signal?: AbortSignal): Promise<Manifest> {
    const files: Manifest['files'] = Object.create(null);
    const walk = async (dir: string, rel: string) => {
      signal?.throwIfAborted();
      for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        const p = rel ? `${rel}/${entry.name}` : entry.name;
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) {
          files[p] = 'dir';
          await walk(full, p);
        } else if (entry.isFile()) {
          const s = await stat(full);
          const was = before.files[p];
          files[p] =
            was && was !== 'dir' && was.size === s.size && was.mtimeMs === s.mtimeMs
              ? was
              : { size: s.size, mtimeMs: s.mtimeMs, sha256: await hashOf(full) };
        }
      }
    };
    await walk(this.root, '');
    return { version: before.version, files };
  }

  async #save(m: Manifest) {
    await writeFile(this.#manifestPath, JSON.stringify(m));
  }

  #inside(rel: string): string {
    const full = path.resolve(this.root, rel);
    if (!full.startsWith(`${this.root}${path.sep}`))
      throw new Error(`A sandbox path left its folder: ${rel}`);
    return full;
  }
}

const same = (a: Manifest['files'][string] | undefined, b: Manifest['files'][string]) =>
  a === b || (a !== undefined && a !== 'dir' && b !== 'dir' && a.sha256 === b.sha256);

async function hashOf(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Working copies on this instance's disk whose Conversation is gone (deleted through another instance): removed.
 * The files themselves went with the Conversation's rows. `existing` says which Conversations are still stored
 * (conversations' `existingConversations`, handed in by server.ts).
 */
export async function sweepSandboxCopies(
  sql: Sql,
  dataDir: string,
  existing: (sql: Sql, ids: string[]) => Promise<string[]>,
): Promise<number> {
  const folder = path.join(dataDir, 'sandboxes');
  const ids = [
    ...new Set(
      (await readdir(folder).catch(() => [] as string[]))
        .map((name) => name.replace(/\.manifest\.json$/, ''))
        .filter((name) => /^[0-9a-f-]{36}$/.test(name)),
    ),
  ];
  if (!ids.length) return 0;
  const alive = new Set(await existing(sql, ids));
  const gone = ids.filter((id) => !alive.has(id));
  for (const id of gone) {
    await rm(path.join(folder, id), { recursive: true, force: true });
    await rm(path.join(folder, `${id}.manifest.json`), { force: true });
  }
  return gone.length;
}
