import { Worker } from 'node:worker_threads';
import { AtpAgent } from '@atproto/api';
import { decodeAll } from '@atproto/lex-cbor';
import { parseCommitUnauthenticated } from '@atproto/sync';
import WebSocket from 'ws';
import { startIndexer } from '../../src/appview/index.ts';
import { jetstreamJson } from '../../test/support/jetstream.ts';
import { startLocalApp } from '../../test/support/localnet.ts';
import { writeSession } from '../../test/support/records.ts';
import type { Figure } from '../bench.ts';
import type { Command, ReplayData } from './ingestReplay.ts';
import { round } from './stats.ts';

/** Commits recorded; one in OURS_EVERY is of our collections, the rest another app's posts. */
const RECORDED = 1000;
const OURS_EVERY = 20;
const STEP_S = 2;
const RATES = [1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000];

/**
 * ingest_events_per_s, for the relay firehose and for Jetstream: a stream recorded from the local PDS
 * (1 commit in 20 ours) is replayed to the real indexer at rising rates, 2 s a step, until it falls behind;
 * the figure is the most network events a second it kept up with (events sent ÷ time until the last is in
 * the index). The relay path decodes every commit; Jetstream sends only ours, which is the point of it.
 */
export async function* ingestFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  const local = await startLocalApp({ adminDatabaseUrl });
  let worker: Worker | undefined;
  try {
    const { app } = local;
    const net = app.running.localnet!;
    await app.running.indexer?.stop();
    const data = await record(net);
    worker = new Worker(new URL('./ingestReplay.ts', import.meta.url), {
      workerData: data,
      execArgv: ['--import', 'tsx'],
    });
    const replay = worker;
    replay.on('error', (e) => console.error('ingest bench: the replay worker failed', e));
    const port = await new Promise<number>((r) => replay.once('message', (m: { port: number }) => r(m.port)));
    const sql = app.db.sql;

    const kept: Record<string, number> = {};
    for (const source of ['relay', 'jetstream'] as const) {
      await sql`update index_state set cursor = null, jetstream_cursor = null`;
      const indexer = startIndexer({
        sql,
        source:
          source === 'relay'
            ? { kind: 'relay', url: `ws://127.0.0.1:${port}` }
            : { kind: 'jetstream', url: `ws://127.0.0.1:${port}/subscribe` },
        plcUrl: net.plcUrl,
        local: true,
        fetch: globalThis.fetch,
        log: (m, e) => console.error('ingest bench:', m, e),
      });
      await indexer.leading;
      await new Promise((r) => setTimeout(r, 500)); // connected
      const steps: { rate: number; achieved: number }[] = [];
      for (const rate of RATES) {
        const count = rate * STEP_S;
        // The clock starts when the step's messages are prepared and the first is sent.
        let t0 = 0;
        const { last } = await new Promise<{ last: number }>((resolve) => {
          const on = (m: { ready?: true; last?: number }) => {
            if (m.ready) t0 = performance.now();
            else {
              replay.off('message', on);
              resolve(m as { last: number });
            }
          };
          replay.on('message', on);
          replay.postMessage({ source, rate, count } satisfies Command);
        });
        const column = source === 'relay' ? sql`cursor` : sql`jetstream_cursor`;
        for (;;) {
          const [row] = await sql<{ at: string | null }[]>`select ${column}::text as at from index_state`;
          if (row?.at && Number(row.at) >= last) break;
          await new Promise((r) => setTimeout(r, 10));
        }
        const achieved = count / ((performance.now() - t0) / 1000);
        steps.push({ rate, achieved: Math.round(achieved) });
        if (achieved < 0.8 * rate) break;
      }
      await indexer.stop();
      kept[source] = Math.max(...steps.map((s) => s.achieved));
      yield {
        figure: `ingest_events_per_s_${source}`,
        value: kept[source]!,
        unit: 'network events/s kept up with',
        target: 'informational',
        our_share: round(1 / OURS_EVERY, 3),
        decoded_share: source === 'relay' ? 1 : round(1 / OURS_EVERY, 3),
        steps: steps.map((s) => `${s.rate}:${s.achieved}`).join(' '),
      };
    }
    yield {
      figure: 'ingest_jetstream_vs_relay',
      value: round(kept.jetstream! / kept.relay!, 1),
      unit: 'ratio (network events/s kept up with, same stream, same run)',
      target: 'informational',
    };
  } finally {
    await worker?.terminate();
    await local.close();
  }
}

/** Writes the mixed stream to the local PDS and reads it back from its firehose, as frames and as Jetstream JSON. */
async function record(net: {
  pdsUrl: string;
  accounts: { handle: string; password: string }[];
}): Promise<ReplayData> {
  const agents = await Promise.all(
    net.accounts.slice(0, 2).map(async (a) => {
      const agent = new AtpAgent({ service: net.pdsUrl });
      await agent.login({ identifier: a.handle, password: a.password });
      return agent;
    }),
  );
  const sessions = await Promise.all(agents.map((a) => writeSession(a, a.session!.did, 'Ingest bench')));
  const rkeys = new Set<string>();
  await Promise.all(
    agents.map(async (agent, n) => {
      for (let i = n; i < RECORDED; i += agents.length) {
        const ours = i % OURS_EVERY === OURS_EVERY - 1;
        const res = await agent.com.atproto.repo.createRecord({
          repo: agent.session!.did,
          collection: ours ? 'click.aligned.chat.message' : 'app.bsky.feed.post',
          record: ours
            ? {
                $type: 'click.aligned.chat.message',
                session: sessions[n],
                role: 'user',
                createdAt: new Date().toISOString(),
                text: `turn ${i} ${'words '.repeat(30)}`,
              }
            : {
                $type: 'app.bsky.feed.post',
                text: `post ${i} ${'words '.repeat(20)}`,
                createdAt: new Date().toISOString(),
              },
        });
        rkeys.add(res.data.uri.split('/').pop()!);
      }
    }),
  );
  // Read back from the start; keep the commits just written, in the firehose's order.
  const frames: Uint8Array[] = [];
  const ws = new WebSocket(
    `${net.pdsUrl.replace(/^http/, 'ws')}/xrpc/com.atproto.sync.subscribeRepos?cursor=0`,
  );
  await new Promise<void>((resolve, reject) => {
    let idle: NodeJS.Timeout | undefined;
    ws.on('message', (d: Buffer) => {
      const [header, body] = [...decodeAll(d)] as unknown as [{ t?: string }, { ops?: { path: string }[] }];
      const path = body.ops?.[0]?.path;
      if (header.t === '#commit' && path && rkeys.has(path.split('/')[1]!)) frames.push(new Uint8Array(d));
      clearTimeout(idle);
      idle = setTimeout(resolve, 1000);
    });
    ws.on('error', reject);
  });
  ws.close();
  const jetstream: (Record<string, unknown> | null)[] = [];
  for (const f of frames) {
    const [, body] = [...decodeAll(f)] as unknown as [unknown, never];
    const [evt] = await parseCommitUnauthenticated(body, (c) => c.startsWith('click.aligned.chat.'));
    jetstream.push(evt ? jetstreamJson(evt, 0) : null);
  }
  return { frames, jetstream };
}
