import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { expect, inject, it } from 'vitest';
import { nodeFlags } from '../../scripts/node-flags.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Processes whose environment holds `mark` (Linux /proc): what a run left behind. */
async function processesMarked(mark: string): Promise<number[]> {
  const found: number[] = [];
  for (const pid of (await readdir('/proc')).filter((d) => /^\d+$/.test(d))) {
    const environ = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
    if (environ.includes(mark)) found.push(Number(pid));
  }
  return found;
}

/**
 * A "database" that takes connections and never answers (the bench's servers hang on it before they listen), and
 * the bench run against it with `sections`: every process it starts is marked, so what is left can be found.
 */
async function benchOnBlackHole(sections: string, startMs: number, stdio: 'pipe' | 'ignore') {
  const sockets: net.Socket[] = [];
  const blackHole = net.createServer((s) => sockets.push(s));
  await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
  const port = (blackHole.address() as net.AddressInfo).port;
  const mark = `AV_BENCH_MARK_${randomUUID().replaceAll('-', '')}`;
  const run = spawn(process.execPath, [...nodeFlags(), '--import', 'tsx', 'scripts/bench.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      [mark]: '1',
      TEST_DATABASE_URL: inject('adminDatabaseUrl'),
      BENCH_ONLY: sections,
      BENCH_SERVER_START_MS: String(startMs),
      BENCH_SERVER_ENV: JSON.stringify({ DATABASE_URL: `postgres://x@127.0.0.1:${port}/x`, [mark]: '1' }),
    },
    stdio: ['ignore', stdio, stdio],
  });
  const close = () => {
    for (const s of sockets) s.destroy();
    blackHole.close();
  };
  return { run, mark, close };
}

// #32: a server that never starts is a clear failure of its figure; the bench goes on to the next section, exits
// non-zero at the end, and leaves no process behind.
it('the bench reports a server that never starts as a failed section, runs the rest, exits 1 and leaves nothing running', async () => {
  const { run, mark, close } = await benchOnBlackHole('instances,sandbox', 20_000, 'pipe');
  try {
    let out = '';
    run.stdout!.on('data', (d) => {
      out += d;
    });
    run.stderr!.on('data', () => {});
    const code = await new Promise<number | null>((r) => run.once('exit', r));
    const lines = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { figure: string; error?: string; spread?: number[]; pairs?: number });
    const figures = lines.map((l) => l.figure);
    // The fault fired: the servers did not start (they hang on the black hole, if they get that far) and were
    // given up on at the deadline.
    expect(lines.find((l) => l.figure === 'instances_failed')?.error, out).toMatch(
      /did not start within 20000 ms/,
    );
    // It went on (instances was asked for first): the next section's figure, with its pairs and spread; the machine noted before and after.
    const sandbox = lines.find((l) => l.figure === 'sandbox_command_overhead');
    expect(sandbox?.pairs).toBeGreaterThanOrEqual(5);
    expect(sandbox?.spread).toHaveLength(2);
    expect(figures[0]).toBe('machine_at_start');
    expect(figures.at(-1)).toBe('machine_at_end');
    expect(code).toBe(1);
    expect(await processesMarked(mark)).toEqual([]);
  } finally {
    close();
  }
}, 300_000);

// Stopped from outside (Ctrl-C, a CI job's timeout) while its servers are starting: it exits, and takes them along.
it('the bench stopped by a signal mid-section exits and leaves nothing running', async () => {
  const { run, mark, close } = await benchOnBlackHole('instances', 120_000, 'ignore');
  try {
    const exited = new Promise<number | null>((r) => run.once('exit', r));
    // At least one of its servers is running (hanging on the black hole).
    const servers = async () => {
      const cmdlines = await Promise.all(
        (await processesMarked(mark)).map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')),
      );
      return cmdlines.filter((c) => c.includes('src/main.ts')).length;
    };
    await expect.poll(servers, { timeout: 60_000 }).toBeGreaterThan(0);
    run.kill('SIGTERM');
    expect(await exited).toBe(143);
    await expect.poll(() => processesMarked(mark), { timeout: 10_000 }).toEqual([]);
  } finally {
    // Should it have failed, what it left goes here, not into the rest of the suite.
    for (const pid of await processesMarked(mark)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
    close();
  }
}, 120_000);
