import { expect, it } from 'vitest';
import { freePort, portSlice } from './ports.ts';

it('workers draw ports from disjoint slices below the ephemeral range, and one process never gets a port twice', async () => {
  const slices = [1, 2, 3, 4, 5, 6, 7, 8].map((id) => portSlice(String(id)));
  for (const [i, a] of slices.entries()) {
    expect(a.low).toBeGreaterThanOrEqual(20_000);
    expect(a.high).toBeLessThanOrEqual(32_768);
    for (const b of slices.slice(i + 1)) expect(a.high <= b.low || b.high <= a.low).toBe(true);
  }
  const mine = portSlice();
  const ports = await Promise.all(Array.from({ length: 40 }, () => freePort()));
  expect(new Set(ports).size).toBe(ports.length);
  for (const p of ports) expect(p >= mine.low && p < mine.high).toBe(true);
});
