import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { jsonLineChild } from '../../scripts/bench/jsonLineChild.ts';

// The bench's helper processes answer in JSON lines; one that stays alive and silent hung a whole bench run for an
// hour (stop 46). Now it fails its figure after a bounded wait and is killed, and one that exits fails at once.
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'av-child-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const script = async (name: string, body: string) => {
  const file = path.join(dir, name);
  await writeFile(file, body);
  return file;
};
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it('answers line for line', async () => {
  const child = jsonLineChild(
    await script(
      'echo.mjs',
      `import { createInterface } from 'node:readline';
       process.stdout.write('{"ready":true}\\n');
       for await (const line of createInterface({ input: process.stdin }))
         process.stdout.write(JSON.stringify({ twice: JSON.parse(line).n * 2 }) + '\\n');`,
    ),
  );
  try {
    expect(await child.next()).toEqual({ ready: true });
    expect(await child.ask({ n: 21 })).toEqual({ twice: 42 });
  } finally {
    child.close();
  }
});

it('a child alive and silent fails after the wait and is killed', async () => {
  const pidFile = path.join(dir, 'pid');
  const child = jsonLineChild(
    await script(
      'silent.mjs',
      `import { writeFileSync } from 'node:fs';
       writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));
       setInterval(() => {}, 1000);`,
    ),
    3000,
  );
  await expect(child.next()).rejects.toThrow(/silent\.mjs said nothing for 3 s: killed/);
  const pid = Number(await readFile(pidFile, 'utf8'));
  for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  expect(alive(pid)).toBe(false);
});

it('a child that exits without answering fails at once, saying so, and asking it again does not end the bench', async () => {
  const child = jsonLineChild(await script('gone.mjs', 'process.exit(3);'), 60_000);
  await expect(child.next()).rejects.toThrow(/gone\.mjs exited before it answered/);
  // Its stdin is closed now: the write fails (EPIPE) and the answer says the child is gone.
  await expect(child.ask({ n: 1 })).rejects.toThrow(/exited before it answered/);
});
