import { afterAll, beforeAll, expect, it } from 'vitest';
import { REPLACED_WAITS_MS, restoreSession } from '../../src/auth/restore.ts';
import type { TestApp } from '../support/app.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';

// A sign-in on a second device replaces the Player's one grant: the OAuth client revokes the old one, deletes it,
// and stores the new one a round trip later. A request of the first device that looks in between must neither
// fail nor end the Player's web sessions (it used to do both: "deleted by another process" read as an ending).
let local: LocalApp;
let app: TestApp;

beforeAll(async () => {
  local = await startLocalApp();
  app = local.app;
}, 120_000);
afterAll(() => local?.close());

const webSessions = async (did: string) =>
  Number(
    (
      await app.db.sql`select count(*)::int as n from sessions
      where player_id in (select id from players where did = ${did})`
    )[0]!.n,
  );

it('a request landing while another device replaces the grant waits for the new one, and signs no one out', async () => {
  const alice = await local.signInAs('alice.test');
  const { cookie } = alice;
  await local.browser.page.waitForLoadState('networkidle');
  expect(await webSessions(alice.did)).toBe(1);
  const [grant] = await app.db.sql`select value from oauth_sessions where did = ${alice.did}`;

  // The other device's callback, between its delete and its store: the grant is gone for 300 ms.
  await app.db.sql`delete from oauth_sessions where did = ${alice.did}`;
  const stored = new Promise<void>((resolve) =>
    setTimeout(async () => {
      await app.db.sql`insert into oauth_sessions (did, value) values (${alice.did}, ${grant!.value})`;
      resolve();
    }, 300),
  );
  const restored = await restoreSession(app.running.oauth, alice.did, 'continue');
  await stored;
  expect(restored.did).toBe(alice.did);
  expect(await webSessions(alice.did)).toBe(1);
  expect((await app.api('/api/me', { cookie })).status).toBe(200);

  // The same instant met by a session already restored: its next call to the PDS waits for the new grant too.
  await app.db.sql`delete from oauth_sessions where did = ${alice.did}`;
  // (A query of postgres.js runs only once awaited.)
  const storedAgain = new Promise<unknown>((resolve) =>
    setTimeout(
      () =>
        resolve(app.db.sql`insert into oauth_sessions (did, value) values (${alice.did}, ${grant!.value})`),
      300,
    ),
  );
  const described = await restored.fetchHandler(
    `/xrpc/com.atproto.repo.describeRepo?repo=${encodeURIComponent(alice.did)}`,
  );
  await storedAgain;
  expect(described.status).toBe(200);
  expect(await webSessions(alice.did)).toBe(1);

  // Gone for good (no new grant comes): the restore says the sign-in ended once it has waited, and ends no web
  // session on its own: whoever took the grant away decided that (a sign-out everywhere already did).
  await app.db.sql`delete from oauth_sessions where did = ${alice.did}`;
  const t0 = Date.now();
  await expect(restoreSession(app.running.oauth, alice.did, 'continue')).rejects.toMatchObject({
    code: 'SESSION_ENDED',
  });
  expect(Date.now() - t0).toBeGreaterThanOrEqual(REPLACED_WAITS_MS.reduce((a, b) => a + b, 0));
  expect(await webSessions(alice.did)).toBe(1);
}, 120_000);
