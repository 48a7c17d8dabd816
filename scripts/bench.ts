// npm run bench: one JSON line per figure, {"figure", "value", "unit", "target", ...}. Ratios are measured side
// by side in one run, alternating the two sides, so the machine's load affects both alike.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../src/db/index.ts';
import { abuseFigures } from './bench/abuse.ts';
import { appviewFigures } from './bench/appview.ts';
import { attachmentFigures } from './bench/attachments.ts';
import { ingestFigures } from './bench/ingest.ts';
import { instanceFigures } from './bench/instances.ts';
import { latencyFigures } from './bench/latency.ts';
import { publishFigures } from './bench/publish.ts';
import { readerFigures } from './bench/reader.ts';
import { replyFigures } from './bench/replies.ts';
import { sandboxFigures } from './bench/sandbox.ts';
import { round } from './bench/stats.ts';
import { turnFigures } from './bench/turn.ts';
import { webFigures } from './bench/web.ts';

export interface Figure {
  figure: string;
  value: number;
  unit: string;
  target: string;
  [extra: string]: unknown;
}

const print = (f: Figure) => console.log(JSON.stringify(f));

let adminUrl = process.env.TEST_DATABASE_URL ?? process.env.BENCH_DATABASE_URL;
let cleanup = async () => {};
if (!adminUrl) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'av-bench-pg-'));
  const { chmod } = await import('node:fs/promises');
  await chmod(dir, 0o755);
  const pg = await startEmbeddedPostgres(path.join(dir, 'data'));
  adminUrl = pg.url;
  cleanup = async () => {
    await pg.stop();
    await rm(dir, { recursive: true, force: true });
  };
}

// Stopped (Ctrl-C, a CI timeout): the database goes, and exiting kills every server the bench spawned
// (test/support/process.ts kills them on exit, which a signal alone would skip).
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const)
  process.once(signal, () => void cleanup().finally(() => process.exit(code)));

// BENCH_ONLY=ingest,appview runs some sections, in the order named.
const only = process.env.BENCH_ONLY?.split(',');
const sections: [string, () => AsyncGenerator<Figure>][] = [
  ['turn', () => turnFigures(adminUrl)],
  ['latency', () => latencyFigures(adminUrl)],
  ['web', () => webFigures(adminUrl)],
  ['reader', () => readerFigures(adminUrl)],
  ['publish', () => publishFigures(adminUrl)],
  ['appview', () => appviewFigures(adminUrl)],
  ['ingest', () => ingestFigures(adminUrl)],
  ['sandbox', () => sandboxFigures()],
  ['attachments', () => attachmentFigures(adminUrl)],
  ['replies', () => replyFigures(adminUrl)],
  ['instances', () => instanceFigures(adminUrl)],
  ['abuse', () => abuseFigures(adminUrl)],
];
/** The machine the figures were measured on: a single run's figure swings with the load beside it. */
const machine = (when: string) => ({
  figure: `machine_${when}`,
  value: round(os.loadavg()[0]!, 2),
  unit: 'load average (1 min)',
  target: 'for reading the figures',
  cores: os.availableParallelism(),
  // The server's Node flags (npm run bench runs with npm start's): figures taken without them are not comparable.
  node: `${process.version} ${process.execArgv.filter((a) => a !== '--import' && a !== 'tsx').join(' ')}`.trim(),
  loadavg_1_5_15: os.loadavg().map((l) => round(l, 2)),
  free_memory_gb: round(os.freemem() / 1024 ** 3, 1),
});
print(machine('at_start'));
// A section that fails (a server that would not start, a figure that threw) is reported as failed and the bench
// goes on to the next; the run exits non-zero at the end.
const failed: string[] = [];
try {
  const chosen = only ? only.flatMap((n) => sections.filter(([name]) => name === n)) : sections;
  for (const [name, figures] of chosen) {
    try {
      for await (const figure of figures()) print({ ...figure, load_1min: round(os.loadavg()[0]!, 2) });
    } catch (e) {
      failed.push(name);
      print({
        figure: `${name}_failed`,
        value: 1,
        unit: 'section failed',
        target: '0',
        error: String((e as Error)?.message ?? e).slice(0, 2000),
      });
    }
  }
} finally {
  await cleanup();
}
print(machine('at_end'));
if (failed.length) console.error(`bench: ${failed.length} section(s) failed: ${failed.join(', ')}`);
process.exit(failed.length ? 1 : 0);
