import { spawn } from 'node:child_process';
import { MIN_PAIRS, median } from './stats.ts';

// A Node process kept busy for `ms` with work shaped like a server's (objects made, JSON written and read, garbage
// collected); prints how many rounds it did.
const BUSY = `
const end = performance.now() + Number(process.argv[1]); let n = 0;
const o = { a: [1, 2, 3], b: 'x'.repeat(200), c: { d: 1.5, e: null, f: [{ g: 'h' }] } };
while (performance.now() < end) { for (let i = 0; i < 200; i++) JSON.parse(JSON.stringify(o)); n++; }
console.log(n);`;

function busy(ms: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', BUSY, String(ms)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.on('error', reject);
    child.on('close', () => resolve(Number(out.trim())));
  });
}

/**
 * How much work two busy processes each get done beside each other, as a share of what one does alone: 1 where
 * the two cores are wholly independent, less where they share a physical core, caches or memory bandwidth. Two
 * server instances can do no better than this even with nothing else on the machine. Alternating, `MIN_PAIRS`
 * times, median.
 */
export async function parallelEfficiency(ms = 1500): Promise<number> {
  const shares: number[] = [];
  for (let i = 0; i < MIN_PAIRS; i++) {
    const alone = await busy(ms);
    const [x, y] = await Promise.all([busy(ms), busy(ms)]);
    shares.push((x! + y!) / 2 / alone);
  }
  return median(shares);
}
