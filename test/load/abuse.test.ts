import { expect, it } from 'vitest';
import { abuseRatio, median, runAbuse } from './abuse.ts';

// Issue #25's bar: while attacker Players (processes of their own) run every attack measured against the server
// at once, a victim Player's requests each stay within 2× of their unloaded time, or within 2 s where that time
// is tiny and the shared machine's noise dominates. The bench reports the same scenario's figure.
it('a victim is served within 2× (or 2 s) while eight attacker processes run the known attacks', async () => {
  const result = await runAbuse({ samples: 5, progress: (l) => process.stderr.write(`${l}\n`) });
  const seen = (kind: string, key: string) =>
    result.attackers.filter((a) => a.kind === kind).reduce((n, a) => n + (a.counts[key] ?? 0), 0);
  const answered = (kind: string) =>
    result.attackers
      .filter((a) => a.kind === kind)
      .flatMap((a) => Object.entries(a.counts))
      .filter(([k]) => /:\d+$/.test(k))
      .reduce((n, [, v]) => n + v, 0);
  // Every attack reached what it aims at while the victim was measured.
  expect(answered('import-bomb')).toBeGreaterThan(0);
  expect(answered('card-bomb')).toBeGreaterThan(0);
  expect(seen('trickle', 'trickle:opened')).toBeGreaterThan(0);
  expect(seen('exports', 'exports:200')).toBeGreaterThan(0);
  expect(seen('heavy-read', 'heavy-read:200')).toBeGreaterThan(0);
  expect(seen('pages', 'page-server:hit')).toBeGreaterThan(0);
  expect(result.attackerCommands).toBeGreaterThan(0);

  const report = Object.entries(result.samples).map(([metric, s]) => ({
    metric,
    unloaded: Math.round(median(s.unloaded)),
    loaded: Math.round(median(s.loaded)),
    ratio: Math.round(abuseRatio(s) * 100) / 100,
  }));
  console.log(JSON.stringify({ report, attackers: result.attackers, server: result.server }));
  // Nothing failed on the server's side, for the victim or anyone: every refusal was a refusal in words.
  expect(result.failures).toEqual([]);
  expect(result.serverErrors).toEqual([]);
  expect(report.filter((r) => r.ratio > 2)).toEqual([]);
}, 900_000);
