import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { TID } from '@atproto/common-web';
import { build } from 'vite';
import { indexRecords } from '../../src/appview/store.ts';
import { CLIENT_DIR } from '../../src/web/index.ts';
import { type CardInput, renderCard } from '../../src/web/linkCard.ts';
import { startTestApp } from '../../test/support/app.ts';
import type { Figure } from '../bench.ts';
import { paired, quantile, round, spreadOf } from './stats.ts';

type Chunk = { file: string; imports?: string[]; isEntry?: boolean };

/** The reader entry's JavaScript as a thread page loads it (the entry and what it imports), gzipped; and the largest chunk. */
async function bundleFigures(): Promise<Figure[]> {
  await build({
    configFile: path.resolve(import.meta.dirname, '../../client/vite.config.ts'),
    logLevel: 'warn',
  });
  const manifest = JSON.parse(await readFile(path.join(CLIENT_DIR, '.vite/manifest.json'), 'utf8')) as Record<
    string,
    Chunk
  >;
  const files = new Set<string>();
  const visit = (key: string) => {
    const c = manifest[key];
    if (!c || files.has(c.file)) return;
    files.add(c.file);
    for (const k of c.imports ?? []) visit(k);
  };
  visit('src/reader.tsx');
  const gz = async (f: string) => gzipSync(await readFile(path.join(CLIENT_DIR, f))).length;
  let readerBytes = 0;
  for (const f of files) readerBytes += await gz(f);
  const chunks = Object.values(manifest).filter((c) => c.file.endsWith('.js'));
  let largest = { file: '', kb: 0 };
  for (const c of chunks) {
    const kb = (await readFile(path.join(CLIENT_DIR, c.file))).length / 1000;
    if (kb > largest.kb) largest = { file: c.file, kb };
  }
  return [
    {
      figure: 'reader_js_gzip_kb',
      value: round(readerBytes / 1024, 1),
      unit: 'KB gzip',
      target: '<= 150',
      files: [...files],
    },
    {
      figure: 'client_largest_chunk_kb',
      value: round(largest.kb, 1),
      unit: 'kB minified',
      // Vite's warning starts above 500 kB.
      target: '<= 500',
      file: largest.file,
    },
  ];
}

/** Until the first byte of the body; the rest read untimed. */
async function firstByte(url: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url);
  const reader = res.body!.getReader();
  await reader.read();
  const ms = performance.now() - t0;
  while (!(await reader.read()).done);
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  return ms;
}

/**
 * A server-rendered thread page (30 turns of Markdown with steps and bars) against a static file of the same
 * size from the same server, alternating, after a warm-up: what rendering on the server costs a reader.
 */
async function* pageFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  const app = await startTestApp({ lookupCacheMs: 10_000 }, {}, { adminDatabaseUrl });
  const staticFile = path.join(CLIENT_DIR, `bench-static-${process.pid}.html`);
  try {
    const did = 'did:plc:benchreader00000000000001';
    await app.db.sql`insert into index_actors (did, handle, verified_at) values (${did}, 'bench.test', now())
      on conflict (did) do update set verified_at = now()`;
    const rkey = TID.nextStr();
    const session = `at://${did}/click.aligned.chat.session/${rkey}`;
    const createdAt = new Date().toISOString();
    const cid = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
    await indexRecords(app.db.sql, did, [
      {
        collection: 'click.aligned.chat.session',
        rkey,
        cid,
        record: {
          $type: 'click.aligned.chat.session',
          title: 'A bench thread',
          createdAt,
          agents: [{ name: 'Ada' }],
        },
      },
      ...Array.from({ length: 30 }, (_, i) => ({
        collection: 'click.aligned.chat.message',
        rkey: TID.nextStr(),
        cid,
        record: {
          $type: 'click.aligned.chat.message',
          session,
          createdAt,
          role: i % 2 ? 'assistant' : 'user',
          ...(i % 2 ? { model: 'fake/fake-model', steps: [{ name: 'search', summary: 'looked' }] } : {}),
          text: `**Turn ${i}**: the code is ████████.\n\n- one\n- two\n\n${'Lorem ipsum dolor sit amet. '.repeat(16)}`,
        },
      })),
    ]);
    const page = `${app.running.listenUrl}/profile/${did}/thread/${rkey}`;
    // The first read renders the thread (timed on its own); the pairs read the rendered version, as most reads do.
    const t0 = performance.now();
    const html = await (await fetch(page)).text();
    const coldMs = performance.now() - t0;
    await writeFile(staticFile, 'x'.repeat(Buffer.byteLength(html)));
    const bare = `${app.running.listenUrl}/${path.basename(staticFile)}`;
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < 25; i++) {
      const order = i % 2 ? ([page, bare] as const) : ([bare, page] as const);
      for (const url of order) {
        const ms = await firstByte(url);
        if (i >= 5) (url === page ? a : b).push(ms);
      }
    }
    const p = paired(a, b);
    yield {
      figure: 'reader_first_html_ms_ratio',
      value: round(p.ratio, 2),
      unit: 'ratio',
      target: '<= 2',
      ...spreadOf(p),
      page_ms: round(p.a, 2),
      static_ms: round(p.b, 2),
      html_bytes: Buffer.byteLength(html),
      first_render_ms: round(coldMs, 1),
    };
  } finally {
    await rm(staticFile, { force: true });
    await app.close();
  }
}

/** Drawing a link card (satori's layout and sharp's PNG), uncached: each input differs. */
async function cardFigure(): Promise<Figure> {
  const input = (i: number): CardInput => ({
    title: `The harbour map, part ${i}`,
    author: '@bench.test',
    lines: [
      'Ada, is the old map of the harbour right? The pier moved twice since.',
      `It is wrong; the vault code is ████████ and the lighthouse is ████████ (${i}).`,
      'Then the harbour master kept a second ledger, and nobody asked why.',
    ],
  });
  await renderCard(input(-1)); // the layout engine's one-time start
  const ms: number[] = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await renderCard(input(i));
    ms.push(performance.now() - t0);
  }
  return {
    figure: 'og_image_ms',
    value: round(quantile(ms, 0.5), 1),
    unit: 'ms (p50)',
    target: 'measured',
    p90_ms: round(quantile(ms, 0.9), 1),
    runs: ms.length,
  };
}

/** The reading pages (#30): the reader's bundle, a rendered thread's first byte, and the link card. */
export async function* readerFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  yield* await bundleFigures();
  yield* pageFigures(adminDatabaseUrl);
  yield await cardFigure();
}
