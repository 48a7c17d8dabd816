import { describe, expect, it } from 'vitest';
import { DidRecentlyFailed, guardKeyResolution, type KeyResolver } from '../../src/appview/didGuard.ts';

// A hostile DID must not cost the relay path a resolver time-out on every commit it sends (issue 24's review).
describe('the DID guard on the relay path', () => {
  const setup = (answer: (did: string, force: boolean) => Promise<string>) => {
    let t = 0;
    const calls: [string, boolean][] = [];
    const resolver: KeyResolver = {
      resolveAtprotoKey: (did, force = false) => {
        calls.push([did, force]);
        return answer(did, force);
      },
    };
    guardKeyResolution(resolver, { failMs: 1000, refreshMs: 5000, kept: 2, now: () => t });
    const at = (ms: number) => {
      t = ms;
    };
    return { resolver, calls, at };
  };

  it('a DID that failed is not tried again until its time is up; others are not held', async () => {
    const { resolver, calls, at } = setup(async (did) => {
      if (did === 'did:web:evil.example') throw new Error('timed out');
      return 'key';
    });
    await expect(resolver.resolveAtprotoKey('did:web:evil.example')).rejects.toThrow('timed out');
    for (let i = 0; i < 50; i++)
      await expect(resolver.resolveAtprotoKey('did:web:evil.example')).rejects.toBeInstanceOf(
        DidRecentlyFailed,
      );
    expect(calls.filter(([d]) => d === 'did:web:evil.example')).toHaveLength(1);
    expect(await resolver.resolveAtprotoKey('did:plc:good')).toBe('key');
    at(1000);
    await expect(resolver.resolveAtprotoKey('did:web:evil.example')).rejects.toThrow('timed out');
    expect(calls.filter(([d]) => d === 'did:web:evil.example')).toHaveLength(2);
  });

  it('forces a fresh resolution at most once per period, and remembers a bounded number of DIDs', async () => {
    const { resolver, calls, at } = setup(async () => 'key');
    for (let i = 0; i < 20; i++) await resolver.resolveAtprotoKey('did:plc:a', true);
    expect(calls.filter(([, force]) => force)).toHaveLength(1);
    at(5000);
    await resolver.resolveAtprotoKey('did:plc:a', true);
    expect(calls.filter(([, force]) => force)).toHaveLength(2);
    // Past `kept` the oldest is forgotten: it may be forced again.
    await resolver.resolveAtprotoKey('did:plc:b', true);
    await resolver.resolveAtprotoKey('did:plc:c', true);
    await resolver.resolveAtprotoKey('did:plc:a', true);
    expect(calls.filter(([d, force]) => d === 'did:plc:a' && force)).toHaveLength(3);
  });
});
