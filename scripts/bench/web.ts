import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { CDPSession } from 'playwright-core';
import { build } from 'vite';
import { startTestApp } from '../../test/support/app.ts';
import { openSignedIn } from '../../test/support/webapp.ts';
import type { Figure } from '../bench.ts';
import { round } from './stats.ts';

/**
 * Opens a 1,000-Message Conversation in Chromium and loads every page of it (the worst case for the
 * transcript), then counts DOM nodes and the JS heap after a garbage collection.
 */
export async function* webFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  await build({
    configFile: path.resolve(import.meta.dirname, '../../client/vite.config.ts'),
    logLevel: 'warn',
  });
  const app = await startTestApp({}, {}, { adminDatabaseUrl });
  const browser = await openSignedIn(app);
  try {
    const [player] = await app.db.sql`select player_id from sessions limit 1`;
    const [npc] = await app.db
      .sql`insert into npcs (player_id, name) values (${player!.player_id}, 'Ada') returning id`;
    const [c] = await app.db
      .sql`insert into conversations (player_id, title) values (${player!.player_id}, 'Long') returning id`;
    await app.db.sql`insert into conversation_participants values (${c!.id}, ${npc!.id}, 0)`;
    await app.db.sql`
      insert into messages (conversation_id, role, npc_id, npc_name, parts, text, provider, model, input_tokens, output_tokens)
      select ${c!.id}, case when i % 2 = 0 then 'player' else 'npc' end,
        case when i % 2 = 0 then null else ${npc!.id}::uuid end, case when i % 2 = 0 then null else 'Ada' end,
        case when i % 2 = 0 then jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'Question ' || i))
          else jsonb_build_array(
            jsonb_build_object('type', 'reasoning', 'text', 'Thinking about ' || i),
            jsonb_build_object('type', 'tool', 'id', 'c' || i, 'name', 'search', 'state', 'done', 'input', jsonb_build_object('q', i), 'output', 'ok'),
            jsonb_build_object('type', 'text', 'text', '**Answer** ' || i || E'\n\n- one\n- two\n\n' || repeat('Lorem ipsum dolor sit amet. ', 8)))
        end,
        'text ' || i, case when i % 2 = 0 then null else 'fake' end, case when i % 2 = 0 then null else 'fake-model' end,
        case when i % 2 = 0 then null else 100 end, case when i % 2 = 0 then null else 50 end
      from generate_series(1, 1000) i`;
    // One path, each Message answering the one before (as every Conversation is since migration 024). Without
    // the links all 1,000 would be roots, siblings of each other: a 1,000-way fork that no turn can make, each
    // row carrying 1,000 sibling ids (a million strings, 50 MB of the heap measured here).
    await app.db.sql`
      update messages m set parent_id = p.prev
      from (select id, lag(id) over (order by seq) as prev from messages where conversation_id = ${c!.id}) p
      where p.id = m.id and p.prev is not null`;

    const { page } = browser;
    const t0 = performance.now();
    await page.goto(`${app.url}/c/${c!.id}`);
    await page.locator('article.message').first().waitFor();
    const openMs = performance.now() - t0;
    // Load every page: the worst case for the transcript (paging alone would keep only the last 50).
    const transcript = page.locator('.transcript');
    for (let loaded = Number(await transcript.getAttribute('data-count')); ; ) {
      const older = page.locator('button.older');
      if (!(await older.count())) break;
      await older.click();
      // Polled from here: a string predicate would be eval'd in the page, which its Content-Security-Policy forbids.
      const before = loaded;
      for (let i = 0; i < 500 && Number(await transcript.getAttribute('data-count')) <= before; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      loaded = Number(await transcript.getAttribute('data-count'));
    }
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('HeapProfiler.collectGarbage');
    const heap = (await cdp.send('Runtime.getHeapUsage')) as { usedSize: number };
    // BENCH_HEAP_SNAPSHOT=file.heapsnapshot: the heap as Chromium sees it, to find what holds it (DevTools opens it).
    if (process.env.BENCH_HEAP_SNAPSHOT) await saveHeapSnapshot(cdp, process.env.BENCH_HEAP_SNAPSHOT);
    const nodes = (await page.evaluate("document.getElementsByTagName('*').length")) as number;
    const rendered = await page.locator('article.message').count();
    const loaded = Number(await page.locator('.transcript').getAttribute('data-count'));
    yield {
      figure: 'conversation_dom_1000',
      value: nodes,
      unit: 'nodes',
      target: '< 10000',
      messages_loaded: loaded,
      messages_rendered: rendered,
      open_ms: round(openMs, 0),
    };
    yield {
      figure: 'conversation_heap_1000_mb',
      value: round(heap.usedSize / 2 ** 20, 1),
      unit: 'MB',
      target: '< 20',
    };
  } finally {
    await browser.close();
    await app.close();
  }
}

async function saveHeapSnapshot(cdp: CDPSession, file: string): Promise<void> {
  const chunks: string[] = [];
  cdp.on('HeapProfiler.addHeapSnapshotChunk', (e) => chunks.push(e.chunk));
  await cdp.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  await writeFile(file, chunks.join(''));
}
