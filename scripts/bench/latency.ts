// Latency under concurrency, side by side with a bare streamText → SSE pipe over the same fake Provider. A load
// driver in its own process (loadDriver.ts) hosts the fake Provider and the clients, so every delta's added
// delay is read on one clock; the server and the pipe are measured alternately, 3 repetitions, medians.
import path from 'node:path';
import { createLogger } from '../../src/log/index.ts';
import { startTestApp } from '../../test/support/app.ts';
import type { Figure } from '../bench.ts';
import { jsonLineChild } from './jsonLineChild.ts';
import type { Phase, PhaseResult } from './loadDriver.ts';
import { MIN_PAIRS, median, paired, quantile, round, spreadOf } from './stats.ts';
import { startBarePipe } from './turn.ts';

const REPS = MIN_PAIRS;
/** BENCH_LATENCY=idle,start,concurrent,stop runs some of this section's parts (all by default): for profiling one. */
const want = (part: 'idle' | 'start' | 'concurrent' | 'stop') =>
  process.env.BENCH_LATENCY?.split(',').includes(part) ?? true;
const CHECKPOINT_MS = 250;

function percentile(xs: number[], p: number): number {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

export async function startDriver() {
  const child = jsonLineChild(path.join(import.meta.dirname, 'loadDriver.ts'));
  const { fakeBaseURL } = await child.next<{ fakeBaseURL: string }>();
  return {
    fakeBaseURL,
    pid: child.pid,
    async run(phase: Phase): Promise<PhaseResult> {
      const result = await child.ask<PhaseResult>(phase);
      if (result.errors.length)
        throw new Error(`${phase.target} phase failed: ${result.errors.slice(0, 3).join('; ')}`);
      return result;
    },
    close: child.close,
  };
}

export async function* latencyFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  const driver = await startDriver();
  const app = await startTestApp(
    { checkpointMs: CHECKPOINT_MS },
    {
      COMPATIBLE_PROVIDERS: JSON.stringify([{ id: 'fake', baseURL: driver.fakeBaseURL, apiKey: 'bench' }]),
    },
    // Failures are the bench's business: printed, so a refused turn says why.
    { adminDatabaseUrl, logger: createLogger({ level: 'error', format: 'pretty' }) },
  ).catch((e) => {
    // A server that did not start leaves no driver behind it either.
    driver.close();
    throw e;
  });
  const pipe = await startBarePipe(driver.fakeBaseURL).catch(async (e) => {
    await app.close();
    driver.close();
    throw e;
  });
  try {
    await app.db.sql`update village_settings set turns_per_minute = 10000, concurrent_streams = 1000,
      player_daily_tokens = 1000000000000, village_daily_tokens = 1000000000000, max_conversations = 1000000`;
    // Load comes from many Players at once (one Player's turns are admitted one at a time, by design).
    const conversations: string[] = [];
    const cookies: string[] = [];
    for (let i = 0; i < 200; i++) {
      const { cookie } = await app.signIn();
      const npc = (await (await app.api('/api/npcs', { cookie, body: { name: 'Bench' } })).json()) as {
        npc: { id: string };
      };
      const res = await app.api('/api/conversations', { cookie, body: { npcIds: [npc.npc.id] } });
      conversations.push(((await res.json()) as { conversation: { id: string } }).conversation.id);
      cookies.push(cookie);
    }
    const serverUrls = (n: number) =>
      conversations.slice(0, n).map((id) => `${app.url}/api/conversations/${id}/messages`);
    const phase = (
      target: 'server' | 'pipe',
      n: number,
      deltas: number,
      extra: Partial<Phase> = {},
    ): Phase => ({
      target,
      urls: target === 'server' ? serverUrls(n) : Array.from({ length: n }, () => pipe.url),
      cookies: cookies.slice(0, n),
      deltas,
      paceMs: 20,
      ...extra,
    });
    /**
     * Both sides, alternately, `reps` times; what `pick` reads from each run, medians. Also how busy this
     * process (which hosts both sides) was: near 100 % of a core, a side is saturated and its p99 is a queue.
     */
    const sideBySide = async (
      n: number,
      deltas: number,
      pick: (r: PhaseResult) => number,
      during?: () => () => Promise<void>,
      reps = REPS,
    ) => {
      const server: number[] = [];
      const bare: number[] = [];
      const cpu = { server: [] as number[], pipe: [] as number[] };
      // CPU time of this process per delta streamed, µs: the per-delta work itself, which the machine's load
      // beside the bench does not inflate the way it does wall time.
      const perDelta = { server: [] as number[], pipe: [] as number[] };
      let lost = 0;
      for (let rep = 0; rep < reps; rep++) {
        for (const target of rep % 2 ? (['pipe', 'server'] as const) : (['server', 'pipe'] as const)) {
          const stop = target === 'server' ? during?.() : undefined;
          const t0 = performance.now();
          const cpu0 = process.cpuUsage();
          const r = await driver.run(phase(target, n, deltas));
          const used = process.cpuUsage(cpu0);
          cpu[target].push((used.user + used.system) / 10 / (performance.now() - t0));
          perDelta[target].push((used.user + used.system) / (n * deltas));
          await stop?.();
          (target === 'server' ? server : bare).push(pick(r));
          if (target === 'server') lost += r.lost;
        }
      }
      const p = paired(server, bare);
      return {
        server: p.a,
        bare: p.b,
        ratio: p.ratio,
        ...spreadOf(p),
        lost,
        serverCpu: round(median(cpu.server), 0),
        pipeCpu: round(median(cpu.pipe), 0),
        serverPerDelta: round(median(perDelta.server), 1),
        pipePerDelta: round(median(perDelta.pipe), 1),
      };
    };

    // Warm both sides (connections, JIT, the database's caches) at the largest load first.
    await driver.run(phase('server', 200, 20));
    await driver.run(phase('pipe', 200, 20));

    if (want('idle')) {
      const idle = await sideBySide(1, 100, (r) => percentile(r.delays, 50));
      yield {
        figure: 'idle_added_delay_ratio',
        value: round(idle.ratio),
        unit: 'ratio',
        target: '<= 2',
        spread: idle.spread,
        pairs: idle.pairs,
        server_p50_ms: round(idle.server, 2),
        pipe_p50_ms: round(idle.bare, 2),
      };
    }

    if (want('start')) {
      // 41 pairs: each phase is ten turns, and one phase's median swings with what else the machine did then (the
      // pairs' middle half spans 1.0-1.7); over nine pairs the figure moved by 0.3 from run to run, over 21 by up to
      // 0.17 (1.35-1.51 in six runs), over 41 by 0.06. A pair takes about half a second.
      const start = await sideBySide(10, 20, (r) => percentile(r.starts, 50), undefined, 41);
      yield {
        figure: 'start_frame_ratio',
        value: round(start.ratio),
        unit: 'ratio',
        target: '<= 1.5',
        spread: start.spread,
        pairs: start.pairs,
        server_start_p50_ms: round(start.server, 2),
        pipe_first_byte_p50_ms: round(start.bare, 2),
      };
    }

    if (want('concurrent')) {
      // At 200 at once: added delay p99, and how old a streaming row gets between checkpoints.
      // The streaming rows' ages, one list per server phase (so the figure has a spread like every other).
      const ages: number[][] = [];
      const sampleAges = () => {
        let on = true;
        const phaseAges: number[] = [];
        ages.push(phaseAges);
        const loop = (async () => {
          while (on) {
            const rows = await app.db.sql<{ age: number }[]>`
              select extract(epoch from clock_timestamp() - updated_at)::float8 * 1000 as age
              from messages where status = 'streaming'`;
            for (const r of rows) phaseAges.push(r.age);
            await new Promise((r) => setTimeout(r, 50));
          }
        })();
        return async () => {
          on = false;
          await loop;
        };
      };
      // Nine repetitions. At 10,000 deltas a second both sides need more than their one Node thread (the server
      // 220-300 µs of CPU a delta, the pipe 150-210), so each queues and p99 measures how far its backlog grew:
      // one run's pairs spanned 0.5-5.1, and over five pairs the figure went from 0.26 to 1.55 between runs.
      // Pacing one delta every 100 ms did not get below saturation (a lone delta costs more: 650-710 µs).
      const load = await sideBySide(200, 100, (r) => percentile(r.delays, 99), sampleAges, 9);
      yield {
        figure: 'concurrent_200_p99_ratio',
        value: round(load.ratio),
        unit: 'ratio',
        target: '<= 1.5',
        spread: load.spread,
        pairs: load.pairs,
        server_p99_ms: round(load.server, 1),
        pipe_p99_ms: round(load.bare, 1),
        server_cpu_pct: load.serverCpu,
        pipe_cpu_pct: load.pipeCpu,
        cpu_per_delta_us: load.serverPerDelta,
        pipe_cpu_per_delta_us: load.pipePerDelta,
      };
      yield { figure: 'concurrent_200_frames_lost', value: load.lost, unit: 'deltas', target: '0' };
      const lags = ages.filter((a) => a.length).map((a) => percentile(a, 50) / CHECKPOINT_MS);
      const all = ages.flat();
      yield {
        figure: 'checkpoint_lag_200_ms_ratio',
        value: round(median(lags)),
        unit: 'ratio',
        target: '<= 1.5',
        spread: [round(quantile(lags, 0.25)), round(quantile(lags, 0.75))],
        phases: lags.length,
        per_phase: lags.map((l) => round(l, 2)),
        age_p50_ms: round(percentile(all, 50), 1),
        age_p99_ms: round(percentile(all, 99), 1),
        checkpoint_ms: CHECKPOINT_MS,
      };
    }

    if (want('stop')) {
      // Half of 100 streams stopped mid-reply: each stopped row must hold every delta its client saw.
      const stopped = await driver.run(phase('server', 100, 100, { stopAfter: 30 }));
      const ids = stopped.stopped.map((s) => s.messageId);
      for (let i = 0; i < 100; i++) {
        const [busy] = await app.db
          .sql`select 1 from messages where id = any(${ids}::uuid[]) and status = 'streaming'`;
        if (!busy) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const rows = await app.db.sql<{ id: string; text: string; status: string }[]>`
        select id, text, status from messages where id = any(${ids}::uuid[])`;
      const textOf = new Map(rows.map((r) => [r.id, r]));
      let lost = stopped.lost;
      for (const s of stopped.stopped) {
        const row = textOf.get(s.messageId);
        lost += s.seen.filter((i) => !row?.text.includes(`[${i}:`)).length;
      }
      yield {
        figure: 'stop_under_load_lost',
        value: lost,
        unit: 'deltas',
        target: '0',
        stopped: stopped.stopped.length,
        statuses: [...new Set(rows.map((r) => r.status))].join(','),
      };
    }
  } finally {
    driver.close();
    await pipe.close();
    await app.close();
  }
}
