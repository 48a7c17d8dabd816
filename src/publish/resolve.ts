import { type Agent, AtpAgent } from '@atproto/api';
import { IdResolver } from '@atproto/identity';
import type { Resolution } from './projection.ts';
import { isDid, pointerKey, type RecordPointer } from './references.ts';

export interface Resolver {
  handleToDid(handle: string): Promise<string | null>;
  didExists(did: string): Promise<boolean>;
  recordCid(did: string, collection: string, rkey: string): Promise<string | null>;
}

/**
 * Resolution against the network at publish time: handles through the Player's PDS (which also resolves
 * `.test` handles offline), DIDs through PLC, records from the PDS their DID document names.
 */
export function networkResolver(
  agent: Agent,
  plcUrl: string,
  local: boolean,
  fetch: typeof globalThis.fetch,
): Resolver {
  const ids = new IdResolver({ plcUrl, fetch });
  return {
    async handleToDid(handle) {
      try {
        return (await agent.com.atproto.identity.resolveHandle({ handle })).data.did;
      } catch {
        return null;
      }
    },
    async didExists(did) {
      return (await ids.did.resolve(did).catch(() => null)) !== null;
    },
    async recordCid(did, collection, rkey) {
      try {
        const { pds } = await ids.did.resolveAtprotoData(did);
        if (!local && !pds.startsWith('https://')) return null;
        const res = await new AtpAgent({ service: pds, fetch }).com.atproto.repo.getRecord({
          repo: did,
          collection,
          rkey,
        });
        return res.data.cid ?? null;
      } catch {
        return null;
      }
    },
  };
}

/** Resolves every pointer and account once, a few at a time. Unresolvable ones map to null (reported). */
export async function resolveAll(
  resolver: Resolver,
  pointers: RecordPointer[],
  accounts: string[],
): Promise<Resolution> {
  const dids = new Map<string, string | null>();
  const didOf = async (actor: string) => {
    if (!dids.has(actor)) {
      dids.set(
        actor,
        isDid(actor) ? ((await resolver.didExists(actor)) ? actor : null) : await resolver.handleToDid(actor),
      );
    }
    return dids.get(actor) ?? null;
  };
  const refs: Resolution['refs'] = new Map();
  const mentions: Resolution['mentions'] = new Map();
  await inBatches(accounts, async (a) => {
    mentions.set(a, await didOf(a));
  });
  await inBatches(pointers, async (p) => {
    const did = await didOf(p.actor);
    const cid = did ? await resolver.recordCid(did, p.collection, p.rkey) : null;
    refs.set(pointerKey(p), did && cid ? { uri: `at://${did}/${p.collection}/${p.rkey}`, cid } : null);
  });
  return { refs, mentions };
}

async function inBatches<T>(items: T[], fn: (item: T) => Promise<void>, size = 8) {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}
