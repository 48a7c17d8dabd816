import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';
import { nodeFlags } from './scripts/node-flags.mjs';

// CI asks for a JSON report beside the usual output (it reads the pass/fail counts from it).
const jsonReport = process.env.VITEST_JSON_REPORT;

export default defineConfig({
  plugins: [react()],
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    // Load tests run on their own after the rest (vitest.load.config.ts).
    exclude: ['test/load/**', '**/node_modules/**'],
    globalSetup: ['test/support/globalSetup.ts'],
    // The server's own Node flags (npm start's), so what the tests prove holds for it as it runs.
    execArgv: nodeFlags(),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: jsonReport ? ['default', 'json'] : ['default'],
    outputFile: jsonReport ? { json: jsonReport } : undefined,
  },
});
