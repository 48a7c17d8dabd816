/**
 * The relay path verifies each commit against its author's key, one event at a time, and on a failed
 * verification resolves the DID again bypassing the cache. A DID whose document host hangs, or serves a key that
 * never verifies (any did:web's owner can arrange either), would so cost the whole index a resolver time-out on
 * every commit it sends. This guard lets each DID fail at most once per `failMs` (later calls fail at once) and
 * force a fresh resolution at most once per `refreshMs`. Bounded: the oldest entries go past `kept`.
 */
export interface KeyResolver {
  resolveAtprotoKey(did: string, forceRefresh?: boolean): Promise<string>;
}

export interface DidGuardOptions {
  failMs: number;
  refreshMs: number;
  kept: number;
  now?: () => number;
}

export const DID_GUARD: DidGuardOptions = { failMs: 5 * 60_000, refreshMs: 10 * 60_000, kept: 10_000 };

export class DidRecentlyFailed extends Error {
  constructor(did: string) {
    super(`${did} could not be resolved a moment ago; its events are skipped until it is tried again`);
  }
}

/** Wraps `resolver.resolveAtprotoKey` in place (the Firehose holds the resolver itself). */
export function guardKeyResolution(resolver: KeyResolver, o: DidGuardOptions = DID_GUARD): void {
  const original = resolver.resolveAtprotoKey.bind(resolver);
  const now = o.now ?? Date.now;
  const failedAt = new Map<string, number>();
  const refreshedAt = new Map<string, number>();
  const remember = (map: Map<string, number>, did: string, at: number) => {
    map.delete(did);
    map.set(did, at);
    if (map.size > o.kept) map.delete(map.keys().next().value!);
  };
  resolver.resolveAtprotoKey = async (did: string, forceRefresh = false) => {
    const t = now();
    const failed = failedAt.get(did);
    if (failed !== undefined && t - failed < o.failMs) throw new DidRecentlyFailed(did);
    const refreshed = refreshedAt.get(did);
    const force = forceRefresh && (refreshed === undefined || t - refreshed >= o.refreshMs);
    if (force) remember(refreshedAt, did, t);
    try {
      const key = await original(did, force);
      failedAt.delete(did);
      return key;
    } catch (e) {
      remember(failedAt, did, t);
      throw e;
    }
  };
}
