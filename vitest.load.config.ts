import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

// The load tests measure a victim's latency under attack: they run after the rest of the suite, alone and one
// file at a time, so no other test's work is counted as the attack's.
const jsonReport = process.env.VITEST_JSON_REPORT;

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/load/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    fileParallelism: false,
    outputFile: jsonReport ? { json: `${jsonReport}.load.json` } : undefined,
  },
});
