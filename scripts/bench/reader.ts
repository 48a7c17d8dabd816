import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { TID } from '@atproto/common-web';
import { build } from 'vite';
import { indexRecords } from '../../src/appview/store.ts';
import { CLIENT_DIR } from '../../src/web/index.ts';
import { type CardInput, renderCard } from '../../src/web/linkCard.ts';
import { startTestApp, type TestApp } from '../../test/support/app.ts';
import type { Figure } from '../bench.ts';
import { median, paired, quantile, round, spreadOf } from './stats.ts';

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

/** A published thread of `turns` turns of Markdown with steps and bars, by an author the index knows. */
async function seedThread(app: TestApp, turns: number, n: number): Promise<{ did: string; rkey: string }> {
  const did = `did:plc:benchreader${String(n).padStart(14, '0')}`;
  await app.db
    .sql`insert into index_actors (did, handle, verified_at) values (${did}, ${`bench${n}.test`}, now())
    on conflict (did) do update set verified_at = now()`;
  const rkey = TID.nextStr();
  const session = `at://${did}/click.aligned.chat.session/${rkey}`;
  const createdAt = new Date().toISOString();
  const cid = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
  const messages = Array.from({ length: turns }, (_, i) => ({
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
  }));
  const record = {
    $type: 'click.aligned.chat.session',
    title: 'A bench thread',
    createdAt,
    agents: [{ name: 'Ada' }],
  };
  await indexRecords(app.db.sql, did, [{ collection: 'click.aligned.chat.session', rkey, cid, record }]);
  for (let i = 0; i < messages.length; i += 200)
    await indexRecords(app.db.sql, did, messages.slice(i, i + 200));
  return { did, rkey };
}

/**
 * A server-rendered thread page (30 turns of Markdown with steps and bars) against a static file of the same
 * size from the same server, alternating, after a warm-up: what rendering on the server costs a reader.
 */
async function* pageFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  const app = await startTestApp({ lookupCacheMs: 10_000 }, {}, { adminDatabaseUrl });
  const staticFile = path.join(CLIENT_DIR, `bench-static-${process.pid}.html`);
  try {
    const { did, rkey } = await seedThread(app, 30, 1);
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

type Element = unknown;
type ReactServer = {
  renderToString(e: Element): string;
  renderToPipeableStream(
    e: Element,
    o: { onShellReady(): void; onShellError(e: unknown): void; onError(e: unknown): void },
  ): { pipe(w: Writable): void };
};
// Imported by names the type checker does not follow: React's types bring DOM stand-ins into the server's program.
const REACT: string = 'react';
const REACT_SERVER: string = 'react-dom/server';

/**
 * Whether streaming (React's renderToPipeableStream) would bring a long thread's first byte forward: the first
 * page of a 1000-turn thread (100 turns: a page holds a bounded part of a thread, src/markdown/pages.ts), its body
 * rendered to a string (as the server does) against a stream, alternating, in the
 * server's process (a page cache miss; a hit sends kept bytes either way). The stream's first byte is when React
 * first writes; its last, when it ends. The page's cold first byte over HTTP is beside them.
 */
async function* streamFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  const app = await startTestApp({ lookupCacheMs: 10_000 }, {}, { adminDatabaseUrl });
  try {
    const { did, rkey } = await seedThread(app, 1000, 2);
    const page = `${app.running.listenUrl}/profile/${did}/thread/${rkey}`;
    const t0 = performance.now();
    const coldFirstByte = await firstByte(page);
    const coldMs = performance.now() - t0;
    const html = await (await fetch(page)).text();
    const json = /<script type="application\/json" id="reader-data">(.*?)<\/script>/s.exec(html)?.[1];
    if (!json) throw new Error('No reader data in the page.');
    const data: unknown = JSON.parse(json);
    const { createElement } = (await import(REACT)) as {
      createElement(c: unknown, p: { data: unknown }): Element;
    };
    const server = (await import(REACT_SERVER)) as ReactServer;
    const { ReaderRoot } = (await import(
      path.resolve(import.meta.dirname, '../../client/src/reader/Root.tsx')
    )) as {
      ReaderRoot: unknown;
    };
    const tree = () => createElement(ReaderRoot, { data });
    const asString = () => {
      const t = performance.now();
      const body = server.renderToString(tree());
      return { first: performance.now() - t, end: performance.now() - t, bytes: Buffer.byteLength(body) };
    };
    const asStream = () =>
      new Promise<{ first: number; end: number; bytes: number; writes: number }>((resolve, reject) => {
        const t = performance.now();
        let first = 0;
        let bytes = 0;
        let writes = 0;
        const sink = new Writable({
          write(chunk: Buffer, _enc, cb) {
            if (!writes++) first = performance.now() - t;
            bytes += chunk.length;
            cb();
          },
          final(cb) {
            resolve({ first, end: performance.now() - t, bytes, writes });
            cb();
          },
        });
        const s = server.renderToPipeableStream(tree(), {
          onShellReady: () => s.pipe(sink),
          onShellError: reject,
          onError: reject,
        });
      });
    asString(); // the components' first run (Markdown's parsers warm)
    await asStream();
    const str: { first: number; end: number }[] = [];
    const stm: { first: number; end: number; writes: number }[] = [];
    for (let i = 0; i < 9; i++) {
      if (i % 2) {
        str.push(asString());
        stm.push(await asStream());
      } else {
        stm.push(await asStream());
        str.push(asString());
      }
    }
    const p = paired(
      stm.map((x) => x.first),
      str.map((x) => x.first),
    );
    yield {
      figure: 'reader_stream_first_byte_ratio',
      value: round(p.ratio, 2),
      unit: "ratio (stream ÷ string, a 1000-turn thread's first page)",
      target: '< 1 to switch to streaming',
      ...spreadOf(p),
      string_first_byte_ms: round(median(str.map((x) => x.first)), 1),
      stream_first_byte_ms: round(median(stm.map((x) => x.first)), 1),
      stream_last_byte_ms: round(median(stm.map((x) => x.end)), 1),
      stream_writes: stm[0]!.writes,
      body_bytes: asString().bytes,
      page_bytes: Buffer.byteLength(html),
      http_cold_first_byte_ms: round(coldFirstByte, 1),
      http_cold_whole_ms: round(coldMs, 1),
    };
  } finally {
    await app.close();
  }
}

/**
 * Drawing a link card (satori's layout and sharp's PNG), uncached: each input differs. Latin text (Inter only),
 * and Chinese, Japanese, Korean and emoji (font pieces and Twemoji pictures read once, then kept).
 */
async function* cardFigures(): AsyncGenerator<Figure> {
  const latin = (i: number): CardInput => ({
    title: `The harbour map, part ${i}`,
    author: '@bench.test',
    lines: [
      'Ada, is the old map of the harbour right? The pier moved twice since.',
      `It is wrong; the vault code is ████████ and the lighthouse is ████████ (${i}).`,
      'Then the harbour master kept a second ledger, and nobody asked why.',
    ],
  });
  const cjk = (i: number): CardInput => ({
    title: `港口的地图对吗？第${i}部分 🗺️`,
    author: '@bench.test',
    lines: [
      '古い港の地図は正しいですか？桟橋は二度動きました。',
      `금고 비밀번호는 ████████ 입니다 (${i}) 🔐`,
      '港务长还有第二本账，没有人问为什么。🧑‍🚀',
    ],
  });
  for (const [figure, input] of [
    ['og_image_ms', latin],
    ['og_image_cjk_ms', cjk],
  ] as const) {
    const t0 = performance.now();
    await renderCard(input(-1)); // the layout engine's one-time start; for CJK, the font pieces' first read
    const firstMs = performance.now() - t0;
    const ms: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      await renderCard(input(i));
      ms.push(performance.now() - t);
    }
    yield {
      figure,
      value: round(quantile(ms, 0.5), 1),
      unit: 'ms (p50)',
      target: 'measured',
      p90_ms: round(quantile(ms, 0.9), 1),
      first_ms: round(firstMs, 1),
      runs: ms.length,
    };
  }
}

/** The reading pages (#30): the reader's bundle, a rendered thread's first byte, and the link card. */
export async function* readerFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  yield* await bundleFigures();
  yield* pageFigures(adminDatabaseUrl);
  yield* streamFigures(adminDatabaseUrl);
  yield* cardFigures();
}
