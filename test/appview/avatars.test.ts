import { describe, expect, it } from 'vitest';
import { AvatarCache, type AvatarRef } from '../../src/appview/avatars.ts';
import { AppError } from '../../src/http/index.ts';

/** A fetch that settles when the test says so, counting its calls. */
function deferred() {
  let calls = 0;
  const resolvers: ((b: Uint8Array | null) => void)[] = [];
  const fetchIt = () => {
    calls++;
    return new Promise<Uint8Array | null>((r) => resolvers.push(r));
  };
  return { fetchIt, calls: () => calls, settle: (b: Uint8Array | null) => resolvers.shift()!(b) };
}

const ref = (cid: string, size = 3, mimeType = 'image/png'): AvatarRef => ({ cid, mimeType, size });
const limits = { fetches: 8, perAuthor: 2, perReader: 4, kept: 2, bytes: 1000, retryMs: 60_000 };
let readers = 0;
/** A reader of its own for each ask: the tests of other bounds are not bounded by a reader's share. */
const anyone = () => `reader ${++readers}`;
const busy = { code: 'BUSY', status: 503, retryAfter: 5 };

describe('AvatarCache', () => {
  it('fetches a picture once however many ask for it at the same moment, then serves it from memory', async () => {
    const cache = new AvatarCache();
    const d = deferred();
    const asks = [1, 2, 3].map(() => cache.get('did:plc:a', ref('one'), d.fetchIt, anyone()));
    d.settle(new Uint8Array([1, 2, 3]));
    for (const got of await Promise.all(asks)) expect([...got!]).toEqual([1, 2, 3]);
    expect(d.calls()).toBe(1);
    // Another author's record naming the same content, type and size: the checked bytes serve it too.
    expect([...(await cache.get('did:plc:b', ref('one'), d.fetchIt, anyone()))!]).toEqual([1, 2, 3]);
    expect(d.calls()).toBe(1);
  });

  it('shares a fetch in flight only with asks for the same author: another author’s stalling PDS is no one else’s', async () => {
    const cache = new AvatarCache(limits);
    const d = deferred();
    const attacker = cache.get('did:plc:attacker', ref('victims'), d.fetchIt, anyone());
    const victim = cache.get('did:plc:victim', ref('victims'), d.fetchIt, anyone());
    expect(d.calls()).toBe(2);
    d.settle(null); // the attacker's PDS gave nothing
    d.settle(new Uint8Array(3));
    expect(await attacker).toBeNull();
    expect((await victim)?.length).toBe(3);
  });

  it('serves kept bytes only to a record that declares the same type and size', async () => {
    const cache = new AvatarCache(limits);
    await cache.get('did:plc:a', ref('x', 3, 'image/png'), async () => new Uint8Array(3), anyone());
    const d = deferred();
    const other = cache.get('did:plc:b', ref('x', 3, 'image/gif'), d.fetchIt, anyone());
    expect(d.calls()).toBe(1);
    d.settle(null);
    expect(await other).toBeNull();
  });

  it('refuses past the instance’s limit and past one author’s with 503 BUSY, and takes one again once a fetch ends', async () => {
    const cache = new AvatarCache({ ...limits, fetches: 3 });
    const d = deferred();
    const first = cache.get('did:plc:a', ref('a1'), d.fetchIt, anyone());
    const second = cache.get('did:plc:a', ref('a2'), d.fetchIt, anyone());
    // One author: two at once.
    expect(
      await cache.get('did:plc:a', ref('a3'), d.fetchIt, anyone()).catch((e: unknown) => e),
    ).toMatchObject(busy);
    const third = cache.get('did:plc:b', ref('b1'), d.fetchIt, anyone());
    // The instance: three at once.
    const refused = await cache.get('did:plc:c', ref('c1'), d.fetchIt, anyone()).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject(busy);
    expect(d.calls()).toBe(3);
    // Asking again for one already in flight is not a new fetch: it waits for it.
    const again = cache.get('did:plc:a', ref('a1'), d.fetchIt, anyone());
    d.settle(new Uint8Array(3));
    expect((await first)?.length).toBe(3);
    expect((await again)?.length).toBe(3);
    const fourth = cache.get('did:plc:a', ref('a3'), d.fetchIt, anyone());
    expect(d.calls()).toBe(4);
    for (let i = 0; i < 3; i++) d.settle(new Uint8Array(3));
    await Promise.all([second, third, fourth]);
    expect(cache.size.inFlight).toBe(0);
  });

  it('lets one reader start at most its share, keeps the last places for readers with none, and lets any reader join', async () => {
    const cache = new AvatarCache({ ...limits, fetches: 6, perReader: 3, kept: 2 });
    const d = deferred();
    const ask = (author: string, reader: string) =>
      cache.get(`did:plc:${author}`, ref(author), d.fetchIt, reader).catch((e: unknown) => e);
    // The attacker names three authors of its own, each PDS stalling: three fetches, its share; a fourth is refused.
    const held = ['slow1', 'slow2', 'slow3'].map((a) => ask(a, 'attacker'));
    expect(await ask('slow4', 'attacker')).toMatchObject(busy);
    // A second address of the attacker's gets one, but not a second: the last two places are kept.
    held.push(ask('slow5', 'attacker 2'));
    expect(await ask('slow6', 'attacker 2')).toMatchObject(busy);
    expect(d.calls()).toBe(4);
    // Readers with nothing in flight still get a fetch each while one is free.
    const victims = [ask('good1', 'victim 1'), ask('good2', 'victim 2')];
    expect(await ask('good3', 'victim 3')).toMatchObject(busy);
    expect(d.calls()).toBe(6);
    // Joining a fetch in flight costs nothing: the attacker, at its share, and the instance full, still joins one.
    const joined = cache.get('did:plc:good1', ref('good1'), d.fetchIt, 'attacker');
    expect(d.calls()).toBe(6);
    // …and a reader with none in flight who joined one still counts as having none: once a place is free, a kept
    // one, it starts a fetch of its own.
    const joinedFirst = cache.get('did:plc:good2', ref('good2'), d.fetchIt, 'victim 4');
    expect(d.calls()).toBe(6);
    // A fetch ends and its place comes back: still a kept one, not for the attacker with others in flight, but for a
    // reader with none.
    d.settle(null);
    expect(await held[0]).toBeNull();
    expect(await ask('slow4', 'attacker')).toMatchObject(busy);
    const again = ask('good3', 'victim 4');
    expect(d.calls()).toBe(7);
    for (let i = 0; i < 6; i++) d.settle(new Uint8Array(3));
    expect((await joined)?.length).toBe(3);
    expect((await joinedFirst)?.length).toBe(3);
    await Promise.all([...held, ...victims, again]);
    expect(cache.size.inFlight).toBe(0);
  });

  it('remembers a failed fetch for a minute, then asks again; a throwing fetch is a failure, not a stuck slot', async () => {
    let t = 0;
    const cache = new AvatarCache(limits, () => t);
    let calls = 0;
    const failing = async () => {
      calls++;
      throw new Error('PDS down');
    };
    expect(await cache.get('did:plc:a', ref('gone'), failing, anyone())).toBeNull();
    expect(await cache.get('did:plc:a', ref('gone'), failing, anyone())).toBeNull();
    expect(calls).toBe(1);
    expect(cache.size.inFlight).toBe(0);
    t = 60_001;
    expect(await cache.get('did:plc:a', ref('gone'), failing, anyone())).toBeNull();
    expect(calls).toBe(2);
    // A fetch that throws before it returns a promise gives its places back too.
    const one = new AvatarCache({ ...limits, perReader: 1, perAuthor: 1 });
    const throwing = () => {
      throw new Error('no PDS');
    };
    expect(await one.get('did:plc:a', ref('x'), throwing, 'r')).toBeNull();
    expect(await one.get('did:plc:a', ref('y'), async () => new Uint8Array(3), 'r')).toHaveLength(3);
  });

  it('drops the least recently used pictures past its byte bound, and keeps none larger than it', async () => {
    const cache = new AvatarCache({ ...limits, bytes: 10 });
    const bytes = (n: number) => async () => new Uint8Array(n);
    await cache.get('did:plc:a', ref('a', 4), bytes(4), anyone());
    await cache.get('did:plc:a', ref('b', 4), bytes(4), anyone());
    await cache.get('did:plc:a', ref('a', 4), bytes(4), anyone()); // a hit: a is now the most recent
    await cache.get('did:plc:a', ref('c', 4), bytes(4), anyone()); // 12 bytes: b, the least recent, goes
    expect(cache.size).toEqual({ kept: 2, bytes: 8, inFlight: 0 });
    let fetched = 0;
    const counted = async () => {
      fetched++;
      return new Uint8Array(4);
    };
    await cache.get('did:plc:a', ref('a', 4), counted, anyone());
    await cache.get('did:plc:a', ref('b', 4), counted, anyone());
    expect(fetched).toBe(1);
    await cache.get('did:plc:a', ref('huge', 11), bytes(11), anyone());
    expect(cache.size.bytes).toBeLessThanOrEqual(10);
  });
});
