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
import { replyFigures } from './bench/replies.ts';
import { sandboxFigures } from './bench/sandbox.ts';
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

// BENCH_ONLY=ingest,appview runs some sections (figures are still side by side within each).
const only = process.env.BENCH_ONLY?.split(',');
const sections: [string, () => AsyncGenerator<Figure>][] = [
  ['turn', () => turnFigures(adminUrl)],
  ['latency', () => latencyFigures(adminUrl)],
  ['web', () => webFigures(adminUrl)],
  ['publish', () => publishFigures(adminUrl)],
  ['appview', () => appviewFigures(adminUrl)],
  ['ingest', () => ingestFigures(adminUrl)],
  ['sandbox', () => sandboxFigures()],
  ['attachments', () => attachmentFigures(adminUrl)],
  ['replies', () => replyFigures(adminUrl)],
  ['instances', () => instanceFigures(adminUrl)],
  ['abuse', () => abuseFigures(adminUrl)],
];
try {
  for (const [name, figures] of sections) {
    if (only && !only.includes(name)) continue;
    for await (const figure of figures()) print(figure);
  }
} finally {
  await cleanup();
}
process.exit(0);
