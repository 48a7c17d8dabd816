// `npm start` runs this first: builds the web app only when a source is newer than the built one, so a second
// start takes no build (about 10 s saved). `--force` builds anyway.
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'vite';

const ROOT = path.resolve(import.meta.dirname, '..');
const BUILT = path.join(ROOT, 'dist/client/index.html');
// The client also bundles the pure cores it shares with the server.
const SOURCES = ['client', 'src/parts', 'src/redaction', 'src/wire', 'package-lock.json'].map((p) =>
  path.join(ROOT, p),
);

/** The newest modification time under `target` (a file or a folder, walked whole). */
async function newest(target: string): Promise<number> {
  const info = await stat(target).catch(() => undefined);
  if (!info) return 0;
  if (!info.isDirectory()) return info.mtimeMs;
  const entries = await readdir(target);
  const times = await Promise.all(entries.map((e) => newest(path.join(target, e))));
  return Math.max(info.mtimeMs, ...times);
}

const built = (await stat(BUILT).catch(() => undefined))?.mtimeMs ?? 0;
const sources = Math.max(...(await Promise.all(SOURCES.map(newest))));
if (!process.argv.includes('--force') && built > sources) {
  console.log('The web app is up to date (dist/client); not rebuilding it.');
} else {
  const t0 = performance.now();
  await build({ configFile: path.join(ROOT, 'client/vite.config.ts'), logLevel: 'warn' });
  console.log(`Built the web app into dist/client in ${((performance.now() - t0) / 1000).toFixed(1)} s.`);
}
