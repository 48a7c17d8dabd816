export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

export const round = (x: number, digits = 3): number => Number(x.toFixed(digits));

export const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * Runs a and b alternately `runs` times after `warmup` rounds; returns the medians of each side in ms (or the
 * means, where a rare slow run is part of what is measured).
 */
export async function sideBySide(
  runs: number,
  warmup: number,
  a: () => Promise<void>,
  b: () => Promise<void>,
  stat: (xs: number[]) => number = median,
): Promise<{ a: number; b: number }> {
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < warmup + runs; i++) {
    const order = i % 2 ? [a, b] : [b, a];
    for (const fn of order) {
      const t0 = performance.now();
      await fn();
      const dt = performance.now() - t0;
      if (i >= warmup) (fn === a ? ta : tb).push(dt);
    }
  }
  return { a: stat(ta), b: stat(tb) };
}
