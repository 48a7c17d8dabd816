import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createSession, upsertPlayer } from '../../src/auth/index.ts';
import { createDatabase } from '../../test/support/database.ts';
import type { ServerProcess } from '../../test/support/process.ts';
import type { Figure } from '../bench.ts';
import { spawnBenchServer } from './servers.ts';
import { round } from './stats.ts';

const FILE_BYTES = 20_000_000;

/** A bare Node HTTP server that only reads and hashes what it is sent: the floor for receiving 20 MB at all. */
const BARE = `
const http = require('node:http');
const { createHash } = require('node:crypto');
const s = http.createServer(async (req, res) => {
  const h = createHash('sha256');
  for await (const c of req) h.update(c);
  res.writeHead(201).end(h.digest('hex'));
});
s.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + s.address().port));`;

/**
 * The server's peak memory growth while a Player uploads a 20 MB file: the server runs as its own process (so its
 * RSS is its own), its resident size is sampled every 10 ms from /proc during the upload, and the growth is the
 * peak over the resident size just before. Beside it, the same upload to a bare Node server that only hashes
 * the bytes (Node itself holds incoming buffers until a collection: that part is not ours). Each side runs in
 * fresh processes, alternating, three times; medians.
 */
export async function* attachmentFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  const line = Buffer.from('The quick brown fox jumps over the lazy dog, again and again and again.\n');
  const file = Buffer.alloc(FILE_BYTES);
  for (let at = 0; at < FILE_BYTES; at += line.length) line.copy(file, at);
  const ours: number[] = [];
  const bare: number[] = [];
  const times: number[] = [];
  for (let round = 0; round < 3; round++) {
    const a = await appUpload(adminDatabaseUrl, file);
    ours.push(a.growthMb);
    times.push(a.ms);
    bare.push(await bareUpload(file));
  }
  const growth = median(ours);
  const floor = median(bare);
  yield {
    figure: 'attachment_upload_20mb_rss_mb',
    value: round(growth, 1),
    unit: 'MB',
    target: '< 40 (well under 2× the file)',
    file_mb: round(FILE_BYTES / 2 ** 20, 1),
    growth_per_file: round(growth / (FILE_BYTES / 2 ** 20), 2),
    bare_receive_rss_mb: round(floor, 1),
    ratio_to_bare: round(growth / floor, 2),
    upload_ms: round(median(times), 0),
  };
}

const median = (xs: number[]) => xs.slice().sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

async function measure(pid: number, upload: () => Promise<void>): Promise<number> {
  const rss = async () => {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) * 1024;
  };
  await new Promise((r) => setTimeout(r, 500));
  const before = await rss();
  let peak = before;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, await rss());
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  await upload();
  sampling = false;
  await sampler;
  return (peak - before) / 2 ** 20;
}

const post = async (url: string, body: Uint8Array, headers: Record<string, string> = {}) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream', ...headers },
    body,
  });
  if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
};

async function bareUpload(file: Buffer): Promise<number> {
  const child = spawn(process.execPath, ['-e', BARE], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const url = await new Promise<string>((resolve) =>
      child.stdout.on('data', (d: Buffer) => {
        const m = /listening on (\S+)/.exec(String(d));
        if (m) resolve(m[1]!);
      }),
    );
    for (let i = 0; i < 3; i++) await post(url, Buffer.from(`warm-up ${i}\n`.repeat(50_000)));
    return await measure(child.pid!, () => post(url, file));
  } finally {
    child.kill();
  }
}

async function appUpload(adminDatabaseUrl: string, file: Buffer): Promise<{ growthMb: number; ms: number }> {
  const db = await createDatabase(adminDatabaseUrl);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'av-bench-attach-'));
  let server: ServerProcess | undefined;
  try {
    server = await spawnBenchServer({
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      ATPROTO_NETWORK: 'public',
      HOST: '127.0.0.1',
    });
    const player = await upsertPlayer(db.sql, 'did:plc:benchattachments', 'bench.test');
    const cookie = `av_session=${await createSession(db.sql, player.id)}`;
    const [c] =
      await db.sql`insert into conversations (player_id, title) values (${player.id}, 'Files') returning id`;
    const url = `${server.url}/api/conversations/${c!.id}/attachments?name=big.txt`;
    const headers = { cookie, 'x-agentsville': '1' };
    // Warm up: the upload path's code and the connection pool, with small files of other content.
    for (let i = 0; i < 3; i++) await post(url, Buffer.from(`warm-up ${i}\n`.repeat(50_000)), headers);
    const t0 = performance.now();
    const growthMb = await measure(server.child.pid!, () => post(url, file, headers));
    return { growthMb, ms: performance.now() - t0 - 500 };
  } finally {
    await server?.kill();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
