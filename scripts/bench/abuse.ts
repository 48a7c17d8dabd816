import { abuseRatio, median, runAbuse } from '../../test/load/abuse.ts';
import type { Figure } from '../bench.ts';
import { round } from './stats.ts';

/**
 * The victim's latency under abuse: the load test's scenario (attacker Players as processes of their own running
 * every attack of issue #25 at once) with more samples. Per metric, loaded ÷ unloaded medians, the unloaded time
 * taken as at least 1 s ("within 2 s where the unloaded time is tiny"); the figure is the worst metric's.
 */
export async function* abuseFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  const result = await runAbuse({ adminDatabaseUrl, samples: 5 });
  const metrics = Object.fromEntries(
    Object.entries(result.samples).map(([metric, s]) => [
      metric,
      {
        unloaded_ms: round(median(s.unloaded), 1),
        loaded_ms: round(median(s.loaded), 1),
        ratio: round(abuseRatio(s), 2),
        raw_ratio: round(median(s.loaded) / median(s.unloaded), 2),
      },
    ]),
  );
  yield {
    figure: 'victim_latency_ratio_under_abuse',
    value: Math.max(...Object.values(metrics).map((m) => m.ratio)),
    unit: 'ratio',
    target: '<= 2',
    metrics,
    attackers: result.attackers.map((a) => ({ kind: a.kind, ...a.counts })),
  };
}
