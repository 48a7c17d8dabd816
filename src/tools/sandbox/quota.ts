import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { type FileContent, ReadWriteFs } from 'just-bash';

/** Thrown when a write would take a sandbox past its quota; the host turns it into a clear tool error. */
export class QuotaExceededError extends Error {
  readonly code = 'ENOSPC';
}

/** Files and folders one sandbox may hold, whatever their size. */
const MAX_ENTRIES = 10_000;
/** What an entry costs at least: the disk keeps a block for it, however small. */
const BLOCK = 4096;
/** The longest path and the deepest folder a sandbox may name (each folder is a row when the folder is stored). */
const MAX_PATH = 1024;
const MAX_DEPTH = 64;

export interface Usage {
  bytes: number;
  entries: number;
}

/** What the files under `root` cost: each file's bytes (a block at least), each folder a block. */
export async function usage(root: string): Promise<Usage> {
  const used: Usage = { bytes: 0, entries: 0 };
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(dir, entry.name);
      used.entries++;
      if (entry.isDirectory()) {
        used.bytes += BLOCK;
        await walk(full);
      } else used.bytes += Math.max(BLOCK, (await lstat(full).catch(() => ({ size: 0 }))).size);
    }
  };
  await walk(root);
  return used;
}

/** The longest relative path under `dir`, and the most folders deep (bounded by the entry limit). */
async function extentUnder(dir: string): Promise<{ length: number; depth: number }> {
  const most = { length: 0, depth: 0 };
  const walk = async (d: string, rel: string, depth: number) => {
    for (const entry of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const r = rel ? `${rel}/${entry.name}` : entry.name;
      most.length = Math.max(most.length, r.length);
      most.depth = Math.max(most.depth, depth);
      if (entry.isDirectory()) await walk(path.join(d, entry.name), r, depth + 1);
    }
  };
  await walk(dir, '', 1);
  return most;
}

const bytes = (content: FileContent, encoding?: unknown) =>
  typeof content === 'string'
    ? Buffer.byteLength(content, encoding === 'binary' || encoding === 'latin1' ? 'latin1' : 'utf8')
    : content.byteLength;

/**
 * The Conversation's folder with a quota: every write that adds bytes or entries is counted first, and one that
 * would pass the quota is refused before a byte of it is written. Hard links are refused outright, so every
 * file has one name and one size to count (a second link would let a truncation refund bytes still held).
 */
export class QuotaFs extends ReadWriteFs {
  onRefused: (() => void) | undefined;
  constructor(
    private readonly rootDir: string,
    private readonly quota: number,
    private readonly used: Usage,
    /** What a refusal for bytes says. */
    private readonly full = `No space left: this sandbox may hold ${Math.round(quota / 1_048_576)} MB of files.`,
  ) {
    super({ root: rootDir });
  }

  /** The cost of what is at `p` now, or null when nothing is. */
  private async costOf(p: string): Promise<number | null> {
    try {
      const s = await this.stat(p);
      return s.isFile ? Math.max(BLOCK, s.size) : BLOCK;
    } catch {
      return null;
    }
  }

  private refuse(message: string): never {
    this.onRefused?.();
    throw new QuotaExceededError(message);
  }

  private checkPath(p: string) {
    const parts = path.posix.resolve('/', p).split('/').filter(Boolean);
    if (p.length > MAX_PATH || parts.length > MAX_DEPTH)
      throw Object.assign(
        new Error(
          `File name too long: paths in the sandbox are at most ${MAX_PATH} characters and ${MAX_DEPTH} folders deep.`,
        ),
        { code: 'ENAMETOOLONG' },
      );
  }

  /** The folders a write or `mkdir -p` at `p` would make: each is an entry, counted like any other. */
  private async missingParents(p: string, self: boolean): Promise<number> {
    let missing = 0;
    for (
      let dir = self ? path.posix.resolve('/', p) : path.posix.dirname(path.posix.resolve('/', p));
      dir !== '/';
      dir = path.posix.dirname(dir)
    ) {
      if ((await this.costOf(dir)) !== null) break;
      missing++;
    }
    return missing;
  }

  private reserve(delta: number, entries = 0) {
    if (this.used.bytes + delta > this.quota) this.refuse(this.full);
    if (this.used.entries + entries > MAX_ENTRIES)
      this.refuse(
        `No space left: this sandbox may hold ${MAX_ENTRIES.toLocaleString('en')} files and folders.`,
      );
    this.used.bytes += delta;
    this.used.entries += entries;
  }

  override async writeFile(
    p: string,
    content: FileContent,
    options?: Parameters<ReadWriteFs['writeFile']>[2],
  ) {
    this.checkPath(p);
    const next = Math.max(BLOCK, bytes(content, typeof options === 'string' ? options : options?.encoding));
    const prior = await this.costOf(p);
    const parents = prior === null ? await this.missingParents(p, false) : 0;
    this.reserve(next - (prior ?? 0) + parents * BLOCK, (prior === null ? 1 : 0) + parents);
    return super.writeFile(p, content, options);
  }

  override async appendFile(
    p: string,
    content: FileContent,
    options?: Parameters<ReadWriteFs['appendFile']>[2],
  ) {
    this.checkPath(p);
    const prior = await this.costOf(p);
    const added = bytes(content, typeof options === 'string' ? options : options?.encoding);
    const parents = prior === null ? await this.missingParents(p, false) : 0;
    this.reserve(
      (prior === null ? Math.max(BLOCK, added) : added) + parents * BLOCK,
      (prior === null ? 1 : 0) + parents,
    );
    return super.appendFile(p, content, options);
  }

  override async mkdir(p: string, options?: Parameters<ReadWriteFs['mkdir']>[1]) {
    this.checkPath(p);
    // `mkdir -p a/b/c/…` makes every missing folder on the way in one call: each is counted.
    const missing = options?.recursive
      ? await this.missingParents(p, true)
      : (await this.costOf(p)) === null
        ? 1
        : 0;
    if (missing) this.reserve(missing * BLOCK, missing);
    return super.mkdir(p, options);
  }

  override async mv(src: string, dest: string) {
    // A folder moved takes its tree along: the deepest path under it must still fit where it lands.
    this.checkPath(dest);
    if ((await this.stat(src)).isDirectory) await this.checkTreeAt(src, dest);
    return super.mv(src, dest);
  }

  /** The folder at `src`, moved or copied to `dest`: its longest and its deepest path must still fit there. */
  private async checkTreeAt(src: string, dest: string) {
    // Checked as if the longest and the deepest path under it were one: refusing a little early is fine.
    const below = await extentUnder(path.join(this.rootDir, src));
    this.checkPath(path.posix.join(dest, 'x'.repeat(below.length)));
    this.checkPath(path.posix.join(dest, ...Array(below.depth).fill('x')));
  }

  override async symlink(target: string, linkPath: string) {
    this.checkPath(linkPath);
    return super.symlink(target, linkPath);
  }

  override async link(_existing: string, _new: string): Promise<void> {
    throw Object.assign(new Error('Hard links are not allowed in the sandbox.'), { code: 'EPERM' });
  }

  override async cp(src: string, dest: string, options?: Parameters<ReadWriteFs['cp']>[2]) {
    this.checkPath(dest);
    // A tree copy is counted as the bytes under the source, and must fit the path limits where it lands.
    const s = await this.stat(src);
    if (s.isDirectory) await this.checkTreeAt(src, dest);
    const copied = s.isFile
      ? { bytes: Math.max(BLOCK, s.size), entries: 1 }
      : await usage(path.join(this.rootDir, src));
    this.reserve(copied.bytes, copied.entries);
    return super.cp(src, dest, options);
  }
}
