export const median = (xs: number[]): number => quantile(xs, 0.5);

/** The q-quantile of xs (linear between the two nearest ranks). */
export function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return Number.NaN;
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  return s[lo]! + (s[Math.min(lo + 1, s.length - 1)]! - s[lo]!) * (at - lo);
}

export const round = (x: number, digits = 3): number => Number(x.toFixed(digits));

export const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** At least this many alternating pairs behind every ratio: one run's figure swings with the machine's load. */
export const MIN_PAIRS = 5;

export interface Paired {
  /** Each side's median in ms. */
  a: number;
  b: number;
  /** The median of the pairs' ratios a÷b: the figure. */
  ratio: number;
  /** The ratios' spread: [25th, 75th percentile] of the pairs' ratios. */
  spread: [number, number];
  pairs: number;
  /** Each side's times, in the order measured. */
  times: { a: number[]; b: number[] };
}

/**
 * Runs a and b alternately (b a, a b, b a …) `runs` times (at least MIN_PAIRS) after `warmup` rounds; each round
 * is a pair, measured under the same moment's load; the figure is the median of the pairs' ratios. `before`
 * runs untimed ahead of each side's run: the bench's own resets are not what either side measures.
 */
export async function sideBySide(
  runs: number,
  warmup: number,
  a: () => Promise<void>,
  b: () => Promise<void>,
  before: { a?: () => Promise<void>; b?: () => Promise<void> } = {},
): Promise<Paired> {
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < warmup + Math.max(runs, MIN_PAIRS); i++) {
    const order = i % 2 ? [a, b] : [b, a];
    for (const fn of order) {
      await (fn === a ? before.a : before.b)?.();
      const t0 = performance.now();
      await fn();
      const dt = performance.now() - t0;
      if (i >= warmup) (fn === a ? ta : tb).push(dt);
    }
  }
  return paired(ta, tb);
}

/** The figure and spread of pairs measured elsewhere (a[i] beside b[i]). */
export function paired(a: number[], b: number[]): Paired {
  const ratios = a.map((x, i) => x / b[i]!);
  return {
    a: median(a),
    b: median(b),
    ratio: median(ratios),
    spread: [round(quantile(ratios, 0.25)), round(quantile(ratios, 0.75))],
    pairs: ratios.length,
    times: { a, b },
  };
}

/** What a ratio figure prints beside its value: the spread of its pairs and how many there were. */
export const spreadOf = (p: Paired) => ({ spread: p.spread, pairs: p.pairs });

/**
 * A full collection before a timed side, when the bench runs with --expose-gc (npm run bench does). A side in
 * this process (a server, the offline PDS) otherwise pays, as a major collection at a random moment, for the
 * garbage of the side before it: over nine pairs `publish_1000`'s middle half spanned 1.0–1.5, and 1.17–1.27
 * with this (ADR 0086).
 */
export const settle = (): void => (globalThis as { gc?: () => void }).gc?.();
