import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const GENERATED = path.join(ROOT, 'src/lexicon/generated');

async function files(dir: string, base = dir): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await files(full, base)));
    else out.push(path.relative(base, full));
  }
  return out.sort();
}

it('the committed generated lexicon code is what `npm run lexgen` makes from lexicons/ now', async () => {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'av-lexgen-'));
  try {
    await promisify(execFile)(
      process.execPath,
      [
        'node_modules/@atproto/lex-cli/bin.js',
        'gen-server',
        '--yes',
        tmp,
        'lexicons/click/aligned/chat/defs.json',
        'lexicons/click/aligned/chat/getThread.json',
        'lexicons/click/aligned/chat/listSessions.json',
        'lexicons/click/aligned/chat/message.json',
        'lexicons/click/aligned/chat/session.json',
        'lexicons/com/atproto/repo/strongRef.json',
      ],
      { cwd: ROOT },
    );
    const fresh = await files(tmp);
    expect(await files(GENERATED)).toEqual(fresh);
    for (const file of fresh) {
      expect(await readFile(path.join(GENERATED, file), 'utf8'), `${file} is stale: run npm run lexgen`).toBe(
        await readFile(path.join(tmp, file), 'utf8'),
      );
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
});
