import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { textScript } from '../support/fakeProvider.ts';
import { parsePrometheus } from '../support/prometheus.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

const TOKEN = 'metrics-token-for-the-test-0001';
let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp({}, { METRICS_TOKEN: TOKEN });
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

async function scrape() {
  const res = await app.api('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(await res.text());
}

async function turn(conversationId: string, script: Parameters<TestApp['fake']['enqueue']>[0]) {
  app.fake.enqueue(script);
  return collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Hello?' } }),
  );
}

describe('/metrics', () => {
  it('is not there without the token', async () => {
    expect((await app.api('/metrics')).status).toBe(404);
    expect((await app.api('/metrics', { headers: { authorization: 'Bearer wrong' } })).status).toBe(404);
    expect((await app.api('/metrics', { headers: { authorization: `Bearer ${TOKEN}x` } })).status).toBe(404);
  });

  it('parses as Prometheus text and moves as turns run, fail and are refused', async () => {
    const before = await scrape();
    const delta = (after: Map<string, number>, series: string) =>
      (after.get(series) ?? 0) - (before.get(series) ?? 0);

    const { conversationId } = await setupConversation(app, cookie);
    const ok = await turn(conversationId, textScript('One two three four five six.'));
    expect(ok.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
    // A Provider error that is not retried.
    const failed = await turn(conversationId, (r) => r.fail(400, 'The request is malformed'));
    const error = failed.find((f) => f.type === 'error') as Extract<Frame, { type: 'error' }>;
    expect(error).toBeDefined();
    // One Message a minute: the next is refused before any Provider call.
    await app.db.sql`update village_settings set turns_per_minute = 1`;
    try {
      const refused = await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: 'Again?' },
      });
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMITED');
    } finally {
      await app.db.sql`update village_settings set turns_per_minute = 10000`;
    }

    await app.db.sql`update index_state set jetstream_cursor = null, updated_at = now() - interval '1 hour'`;
    const after = await scrape();
    expect(delta(after, 'agentsville_turns_started_total{provider="fake"}')).toBe(2);
    expect(delta(after, 'agentsville_turns_finished_total{provider="fake",status="complete"}')).toBe(1);
    expect(delta(after, 'agentsville_turns_finished_total{provider="fake",status="failed"}')).toBe(1);
    expect(delta(after, `agentsville_provider_errors_total{provider="fake",code="${error.code}"}`)).toBe(1);
    expect(delta(after, 'agentsville_start_frame_seconds_count{provider="fake"}')).toBe(2);
    expect(delta(after, 'agentsville_output_tokens_per_second_count{provider="fake"}')).toBe(1);
    expect(delta(after, 'agentsville_refusals_total{code="RATE_LIMITED"}')).toBe(1);
    expect(after.get('agentsville_active_streams')).toBe(0);
    // Read from the database at scrape time (appview/'s figure, handed to the route by app.ts): an hour old.
    const age = after.get('agentsville_indexer_cursor_age_seconds')!;
    expect(age).toBeGreaterThanOrEqual(3600);
    expect(age).toBeLessThan(3700);
    // The process's own figures come along.
    expect(after.has('agentsville_process_cpu_user_seconds_total')).toBe(true);
  });
});
