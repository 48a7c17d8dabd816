import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { type FileContent, ReadWriteFs } from 'just-bash';

/** Thrown when a write would take a sandbox past its quota; the host turns it into a clear tool error. */
export class QuotaExceededError extends Error {
  readonly code = 'ENOSPC';
}

/** Bytes the files under `root` hold (a sandbox is bounded by its quota, so the walk is too). */
export async function usage(root: string): Promise<number> {
  let total = 0;
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else total += (await lstat(full).catch(() => ({ size: 0 }))).size;
    }
  };
  await walk(root);
  return total;
}

const bytes = (content: FileContent, encoding?: unknown) =>
  typeof content === 'string'
    ? Buffer.byteLength(content, encoding === 'binary' || encoding === 'latin1' ? 'latin1' : 'utf8')
    : content.byteLength;

/**
 * The Conversation's folder with a byte quota: every write that adds bytes is counted first, and one that would
 * pass the quota is refused before a byte of it is written.
 */
export class QuotaFs extends ReadWriteFs {
  onRefused: (() => void) | undefined;
  constructor(
    private readonly rootDir: string,
    private readonly quota: number,
    private used: number,
  ) {
    super({ root: rootDir });
  }

  private async sizeOf(p: string): Promise<number> {
    try {
      const s = await this.stat(p);
      return s.isFile ? s.size : 0;
    } catch {
      return 0;
    }
  }

  private reserve(delta: number) {
    if (this.used + delta > this.quota) {
      this.onRefused?.();
      throw new QuotaExceededError(
        `No space left: this sandbox may hold ${Math.round(this.quota / 1_048_576)} MB of files.`,
      );
    }
    this.used += delta;
  }

  override async writeFile(
    p: string,
    content: FileContent,
    options?: Parameters<ReadWriteFs['writeFile']>[2],
  ) {
    const next = bytes(content, typeof options === 'string' ? options : options?.encoding);
    this.reserve(next - (await this.sizeOf(p)));
    return super.writeFile(p, content, options);
  }

  override async appendFile(
    p: string,
    content: FileContent,
    options?: Parameters<ReadWriteFs['appendFile']>[2],
  ) {
    this.reserve(bytes(content, typeof options === 'string' ? options : options?.encoding));
    return super.appendFile(p, content, options);
  }

  override async cp(src: string, dest: string, options?: Parameters<ReadWriteFs['cp']>[2]) {
    // A tree copy is counted as the bytes under the source.
    const s = await this.stat(src);
    this.reserve(s.isFile ? s.size : await usage(path.join(this.rootDir, src)));
    return super.cp(src, dest, options);
  }
}
