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

it('an admin caps the output tokens of a reply, and takes the cap away again (issue 27)', async () => {
  const { cookie } = await app.signIn('did:plc:admin1');
  const put = (maxOutputTokens: unknown) =>
    app.api('/api/village', { method: 'PUT', cookie, body: { maxOutputTokens } });
  expect((await put(0)).status).toBe(400);
  expect((await put(2.5)).status).toBe(400);
  const capped = await put(2000);
  expect(capped.status).toBe(200);
  expect(((await capped.json()) as { settings: { maxOutputTokens: unknown } }).settings.maxOutputTokens).toBe(
    2000,
  );
  expect((await app.db.sql`select max_output_tokens from village_settings`)[0]).toEqual({
    max_output_tokens: 2000,
  });
  expect((await put(null)).status).toBe(200);
  expect((await app.db.sql`select max_output_tokens from village_settings`)[0]).toEqual({
    max_output_tokens: null,
  });
});
