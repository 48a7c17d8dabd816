import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { mainThreadSwitches, medianSwitches, switchesPerTurn } from '../../scripts/bench/switches.ts';

// The instances figure reads each server's main thread's context switches from /proc: a thread that sleeps is
// switched off its core voluntarily each time, and those are the counts that must grow.
it.runIf(process.platform === 'linux')("counts a main thread's waits, summed over processes", async () => {
  const before = await mainThreadSwitches([process.pid]);
  expect(before).not.toBeNull();
  for (let i = 0; i < 20; i++) await sleep(5);
  const after = await mainThreadSwitches([process.pid]);
  const per = switchesPerTurn(before!, after!, 20);
  expect(per.voluntary).toBeGreaterThanOrEqual(0.5);
  expect(per.involuntary).toBeGreaterThanOrEqual(0);
  // The same process twice is counted twice: the servers' counts are summed.
  const twice = await mainThreadSwitches([process.pid, process.pid]);
  expect(twice!.voluntary).toBeGreaterThanOrEqual(2 * after!.voluntary);
});

it.runIf(process.platform === 'linux')(
  'is null for a process that is gone, not a count of zero',
  async () => {
    expect(await mainThreadSwitches([2 ** 22 + 1])).toBeNull();
  },
);

it('takes the median of each kind', () => {
  expect(
    medianSwitches([
      { voluntary: 1, involuntary: 9 },
      { voluntary: 3, involuntary: 1 },
      { voluntary: 2, involuntary: 5 },
    ]),
  ).toEqual({ voluntary: 2, involuntary: 5 });
  expect(medianSwitches([])).toBeNull();
});
