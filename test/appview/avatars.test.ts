import { describe, expect, it } from 'vitest';
import { AvatarCache } from '../../src/appview/avatars.ts';
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

describe('AvatarCache', () => {
  it('fetches a picture once however many ask for it at the same moment, then serves it from memory', async () => {
    const cache = new AvatarCache();
    const d = deferred();
    const asks = [
      cache.get('bafyone', d.fetchIt),
      cache.get('bafyone', d.fetchIt),
      cache.get('bafyone', d.fetchIt),
    ];
    d.settle(new Uint8Array([1, 2, 3]));
    for (const got of await Promise.all(asks)) expect([...got!]).toEqual([1, 2, 3]);
    expect(d.calls()).toBe(1);
    expect([...(await cache.get('bafyone', d.fetchIt))!]).toEqual([1, 2, 3]);
    expect(d.calls()).toBe(1);
  });

  it('refuses a fetch past the instance-wide limit with 503 BUSY, and takes one again once a fetch ends', async () => {
    const cache = new AvatarCache({ fetches: 2, bytes: 1000 });
    const d = deferred();
    const first = cache.get('a', d.fetchIt);
    const second = cache.get('b', d.fetchIt);
    const refused = await cache.get('c', d.fetchIt).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'BUSY', status: 503, retryAfter: 5 });
    expect(d.calls()).toBe(2);
    // Asking again for one already in flight is not a new fetch: it waits for it.
    const again = cache.get('a', d.fetchIt);
    d.settle(null);
    expect(await first).toBeNull();
    expect(await again).toBeNull();
    const third = cache.get('c', d.fetchIt);
    expect(d.calls()).toBe(3);
    d.settle(new Uint8Array(1));
    d.settle(new Uint8Array(2));
    await Promise.all([second, third]);
    expect(cache.size.inFlight).toBe(0);
  });

  it('keeps no miss, and drops the least recently used pictures past its byte bound', async () => {
    const cache = new AvatarCache({ fetches: 8, bytes: 10 });
    const bytes = (n: number) => async () => new Uint8Array(n);
    expect(await cache.get('missing', async () => null)).toBeNull();
    expect(cache.size.kept).toBe(0);
    await cache.get('a', bytes(4));
    await cache.get('b', bytes(4));
    await cache.get('a', bytes(4)); // a hit: a is now the most recent
    await cache.get('c', bytes(4)); // 12 bytes: b, the least recent, goes
    expect(cache.size).toEqual({ kept: 2, bytes: 8, inFlight: 0 });
    let fetched = 0;
    const counted = async () => {
      fetched++;
      return new Uint8Array(4);
    };
    await cache.get('a', counted);
    await cache.get('b', counted);
    expect(fetched).toBe(1);
    // A picture larger than the whole bound is served but not kept.
    await cache.get('huge', bytes(11));
    expect(cache.size.bytes).toBeLessThanOrEqual(10);
  });
});
