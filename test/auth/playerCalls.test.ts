import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asPlayer, PlayerCallsBusyError, playerCallFetch } from '../../src/auth/index.ts';
import { leaseRequestLock, SignInBusyError } from '../../src/auth/stores.ts';
import { LeaseLostError, Leases } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

/**
 * A Player's slow server, speaking plain HTTP: `/slow` is held until the test lets it go, `/fast` answers at
 * once, `/never` never answers. It counts the requests in flight for each Player (named in a header), and the
 * most it ever saw at once.
 */
async function slowServer() {
  const inFlight = new Map<string, number>();
  const most = new Map<string, number>();
  const held: (() => void)[] = [];
  let closedEarly = 0;
  const server = http.createServer((req, res) => {
    const who = String(req.headers['x-player']);
    inFlight.set(who, (inFlight.get(who) ?? 0) + 1);
    most.set(who, Math.max(most.get(who) ?? 0, inFlight.get(who)!));
    const done = () => inFlight.set(who, inFlight.get(who)! - 1);
    res.on('close', () => {
      if (!res.writableFinished) closedEarly++;
      done();
    });
    if (req.url === '/fast') return res.end('fast');
    if (req.url === '/slow') return held.push(() => res.end('slow'));
    // '/never': no answer at all.
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    inFlight: (who: string) => inFlight.get(who) ?? 0,
    most: (who: string) => most.get(who) ?? 0,
    held: () => held.length,
    closedEarly: () => closedEarly,
    letGo: () => {
      for (const f of held.splice(0)) f();
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let server: Awaited<ReturnType<typeof slowServer>>;
let db: TestDatabase;
beforeAll(async () => {
  server = await slowServer();
  db = await createTestDatabase();
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

const until = async (what: string, check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!check()) throw new Error(`never: ${what}`);
};

describe('calls to a Player’s own servers', () => {
  it('at most two of one Player’s at once, the rest in turn; another Player’s goes through meanwhile', async () => {
    const gated = playerCallFetch(fetch, { atOnce: 2, timeoutMs: 20_000, waitMs: 20_000 });
    const call = (did: string, path: string) =>
      asPlayer(did, () => gated(`${server.base}${path}`, { headers: { 'x-player': did } })).then((r) =>
        r.text(),
      );
    const slow = Array.from({ length: 6 }, () => call('did:example:slow', '/slow'));
    await until('two slow calls arrive', () => server.held() === 2);
    // The slow server answers nobody yet: still two, and the victim's call is answered at once.
    await new Promise((r) => setTimeout(r, 300));
    expect(server.inFlight('did:example:slow')).toBe(2);
    expect(await call('did:example:victim', '/fast')).toBe('fast');
    // Let each pair go: the next two come in, never more.
    for (let round = 0; round < 3; round++) {
      await until('the next pair', () => server.held() === 2);
      server.letGo();
    }
    expect(await Promise.all(slow)).toEqual(Array(6).fill('slow'));
    expect(server.most('did:example:slow')).toBe(2);
  });

  it('a call is cut off at its time limit, and one that waits past its turn fails without going out', async () => {
    const gated = playerCallFetch(fetch, { atOnce: 1, timeoutMs: 500, waitMs: 200 });
    const call = (path: string) =>
      asPlayer('did:example:never', () =>
        gated(`${server.base}${path}`, { headers: { 'x-player': 'did:example:never' } }),
      );
    const before = server.closedEarly();
    const first = call('/never');
    const second = call('/fast');
    await expect(second).rejects.toBeInstanceOf(PlayerCallsBusyError);
    await expect(first).rejects.toThrow();
    await until('the connection closed', () => server.closedEarly() > before);
    // Only the first reached the server; the slot is free again.
    expect(server.most('did:example:never')).toBe(1);
    expect(await (await call('/fast')).text()).toBe('fast');
  });

  it('under a lease that may not outlive the call, nothing goes out', async () => {
    const gated = playerCallFetch(fetch, { atOnce: 2, timeoutMs: 2000, waitMs: 1000 });
    const leases = new Leases(db.sql);
    const call = () =>
      asPlayer('did:example:fenced', () =>
        gated(`${server.base}/fast`, { headers: { 'x-player': 'did:example:fenced' } }),
      );
    // A term longer than the call: it goes out. A term shorter: refused before any connection.
    await leases.hold('long', { ttlMs: 10_000, waitMs: 1000 }, async () => {
      expect(await (await call()).text()).toBe('fast');
    });
    expect(server.most('did:example:fenced')).toBe(1);
    await leases.hold('short', { ttlMs: 1000, waitMs: 1000 }, async () => {
      await expect(call()).rejects.toBeInstanceOf(LeaseLostError);
    });
    await leases.close();
  });

  it('the OAuth request lock counts what it runs as the Player it is named after, and says when it is busy', async () => {
    const gated = playerCallFetch(fetch, { atOnce: 1, timeoutMs: 20_000, waitMs: 300 });
    const leases = new Leases(db.sql);
    const lock = leaseRequestLock(leases, { ttlMs: 10_000, waitMs: 300 });
    const did = 'did:example:locked';
    const call = () => gated(`${server.base}/fast`, { headers: { 'x-player': did } });
    // The Player's one slot is taken by a call that hangs; a call made inside the lock named after the
    // Player waits for it (and gives up), while the same call outside any Player's context goes at once.
    const hanging = asPlayer(did, () => gated(`${server.base}/slow`, { headers: { 'x-player': did } }));
    await until('the hanging call arrives', () => server.held() === 1);
    await expect(lock(`@atproto-oauth-client-${did}`, call)).rejects.toBeInstanceOf(PlayerCallsBusyError);
    expect(await (await call()).text()).toBe('fast');
    server.letGo();
    await hanging;
    // Held elsewhere past the wait: a clear error of its own, not a network failure.
    const other = new Leases(db.sql);
    let release!: () => void;
    const holding = other.hold(
      `oauth:@atproto-oauth-client-${did}`,
      { ttlMs: 10_000, waitMs: 1000 },
      () =>
        new Promise<void>((r) => {
          release = r;
        }),
    );
    await until('held elsewhere', () => Boolean(release));
    await expect(lock(`@atproto-oauth-client-${did}`, async () => 'no')).rejects.toBeInstanceOf(
      SignInBusyError,
    );
    release();
    await holding;
    expect(await lock(`@atproto-oauth-client-${did}`, async () => 'yes')).toBe('yes');
    await Promise.all([leases.close(), other.close()]);
  });
});
