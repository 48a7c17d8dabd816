import { spawnServer } from '../../test/support/process.ts';

/**
 * Servers the bench starts as processes of their own. On a loaded machine a server can take well over the tests'
 * 30 s to start, so the bench waits longer (BENCH_SERVER_START_MS); past that, the figure fails and the server is
 * killed. BENCH_SERVER_ENV (JSON) is added to every server's settings — how the harness's own test breaks a
 * server start on purpose.
 */
export function spawnBenchServer(env: Record<string, string>) {
  const extra = JSON.parse(process.env.BENCH_SERVER_ENV ?? '{}') as Record<string, string>;
  return spawnServer(
    { ...env, ...extra },
    { startTimeoutMs: Number(process.env.BENCH_SERVER_START_MS ?? 120_000) },
  );
}
