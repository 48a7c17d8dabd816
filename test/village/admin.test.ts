import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({}, { ADMIN_DIDS: 'did:plc:admin1, did:plc:admin2' });
});
afterAll(() => app?.close());

it('an admin changes the Village settings; invalid values are refused and nothing changes', async () => {
  const { cookie } = await app.signIn('did:plc:admin2');
  const ok = await app.api('/api/village', {
    method: 'PUT',
    cookie,
    body: { hopLimit: 3, historyBudget: 20000, sandboxQuotaMb: 50 },
  });
  expect(ok.status).toBe(200);
  expect(((await ok.json()) as { settings: unknown }).settings).toMatchObject({
    hopLimit: 3,
    historyBudget: 20000,
    sandboxQuotaMb: 50,
  });
  const bad = await app.api('/api/village', { method: 'PUT', cookie, body: { historyBudget: 5 } });
  expect(bad.status).toBe(400);
  const unknownProvider = await app.api('/api/village', {
    method: 'PUT',
    cookie,
    body: { defaultProvider: 'nope' },
  });
  expect(unknownProvider.status).toBe(400);
  const [row] = await app.db
    .sql`select hop_limit, history_budget, default_provider, updated_by from village_settings`;
  expect(row).toEqual({
    hop_limit: 3,
    history_budget: 20000,
    default_provider: 'fake',
    updated_by: 'did:plc:admin2',
  });
});
