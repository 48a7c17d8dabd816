import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

// The server renders the client's components (src/web/readerPages.ts). Vitest compiles TSX with its React plugin;
// `npm start` runs the server with plain tsx, which compiles by the root tsconfig — so a component that lost its
// JSX pragma would pass every other test and fail in production. This runs the renderer as production does.

it('the reader renders under plain `node --import tsx`, as `npm start` runs the server', async () => {
  const root = path.resolve(import.meta.dirname, '../..');
  const { stdout: html } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', 'test/support/ssrSmoke.ts'],
    { cwd: root, timeout: 60_000 },
  );
  const stdout = html.replaceAll('<!-- -->', ''); // React's marks between adjacent texts
  expect(stdout).toContain('<h1>Smoke &lt;b&gt;test&lt;/b&gt;</h1>');
  expect(stdout).toContain('<strong>bold</strong> ████████');
  expect(stdout).toContain('let a = 1;');
  expect(stdout).toContain('This record has been deleted.');
  expect(stdout).toContain('About @bob.test');
  expect(stdout).toContain('<span class="model">m/1</span>');
  expect(stdout).toContain('Recently published conversations');
}, 90_000);
