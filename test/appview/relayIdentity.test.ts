import { AtpAgent } from '@atproto/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startIndexer } from '../../src/appview/index.ts';
import type { TestApp } from '../support/app.ts';
import { startOfflineApp } from '../support/localnet.ts';
import { writeSession } from '../support/records.ts';

// The relay sends an identity event for any account on the network. The index resolves nothing for one (a
// stranger's slow DID or handle host held up every event behind it): a known author's handle is hidden until it
// is verified again when next shown, and the author's commits are still verified against their key.
let app: TestApp;
beforeAll(async () => {
  app = await startOfflineApp();
  await app.running.indexer!.leading;
}, 120_000);
afterAll(() => app?.close());

it('an identity event hides a known author’s handle without resolving the DID or the handle; commits still verify', async () => {
  const localnet = app.running.localnet!;
  const account = localnet.accounts.find((a) => a.handle === 'bob.test')!;
  const bob = new AtpAgent({ service: localnet.pdsUrl });
  await bob.login({ identifier: account.handle, password: account.password });
  const sql = app.db.sql;
  // An indexer whose every outbound request is seen, in place of the server's own.
  await app.running.indexer!.stop();
  const asked: string[] = [];
  const seen: typeof fetch = (input, init) => {
    asked.push(String(input instanceof Request ? input.url : input));
    return fetch(input, init);
  };
  const indexer = startIndexer({
    sql,
    source: { kind: 'relay', url: localnet.pdsUrl.replace(/^http/, 'ws') },
    plcUrl: localnet.plcUrl,
    fetch: seen,
    local: true,
    log: () => {},
    retryMs: 100,
  });
  try {
    await indexer.leading;
    await sql`insert into index_actors (did, handle, verified_at) values (${account.did}, 'bob.test', now())
      on conflict (did) do update set handle = 'bob.test', verified_at = now()`;
    const mentions = () =>
      asked.filter((u) => u.includes('bobby.test') || decodeURIComponent(u).includes(account.did));
    await bob.com.atproto.identity.updateHandle({ handle: 'bobby.test' });
    await expect
      .poll(async () => (await sql`select handle from index_actors where did = ${account.did}`)[0]!.handle, {
        timeout: 15_000,
        interval: 100,
      })
      .toBeNull();
    expect(mentions()).toEqual([]);

    // A commit after it is verified against bob's key, read from the PLC: the index takes it.
    const uri = await writeSession(bob, account.did, 'After the identity event');
    await expect
      .poll(async () => (await sql`select 1 from index_sessions where uri = ${uri}`).length, {
        timeout: 15_000,
        interval: 100,
      })
      .toBe(1);
    expect(mentions().length).toBeGreaterThan(0);
  } finally {
    await indexer.stop();
  }
}, 60_000);
