import { type Agent, AtpAgent } from '@atproto/api';
import { getHandle } from '@atproto/common-web';
import { IdResolver, MemoryCache } from '@atproto/identity';
import { lexToIpld } from '@atproto/lexicon';
import { cidForRecord } from '@atproto/repo';
import type { Resolution } from './projection.ts';
import { isDid, pointerKey, type RecordPointer } from './references.ts';
import { shownHandle, shownStrings } from './shown.ts';

export interface Resolver {
  handleToDid(handle: string): Promise<string | null>;
  /** The handle a DID's document claims (what a reader may show for it; null: none); null when it does not resolve. */
  identity(did: string): Promise<{ handle: string | null } | null>;
  /** A record's CID, and the words a reader of a link to it sees (shownStrings); null when not found or not its CID's. */
  record(
    did: string,
    collection: string,
    rkey: string,
  ): Promise<{ cid: string; shown: string[] | null } | null>;
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
  // A DID's document is read once per publish: a link asks for it as its author and again for its record's PDS.
  const ids = new IdResolver({ plcUrl, fetch, didCache: new MemoryCache() });
  return {
    async handleToDid(handle) {
      try {
        return (await agent.com.atproto.identity.resolveHandle({ handle })).data.did;
      } catch {
        return null;
      }
    },
    async identity(did) {
      const doc = await ids.did.resolve(did).catch(() => null);
      return doc ? { handle: shownHandle(getHandle(doc)) } : null;
    },
    async record(did, collection, rkey) {
      try {
        const { pds } = await ids.did.resolveAtprotoData(did);
        if (!local && !pds.startsWith('https://')) return null;
        const res = await new AtpAgent({ service: pds, fetch }).com.atproto.repo.getRecord({
          repo: did,
          collection,
          rkey,
        });
        // The words checked must be the words the CID pins: the record's PDS (anyone's) could send other words
        // here than it sends the network under that CID. Hashed as the repo holds it: the XRPC client's lex values
        // turned to IPLD (a blob as the link it was sent as; hashed as a BlobRef object, its CID is another).
        const cid = (await cidForRecord(lexToIpld(res.data.value) as never)).toString();
        return cid === res.data.cid ? { cid, shown: shownStrings(res.data.value) } : null;
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
  /** A DID that spells a covered word (a did:web): refused as it is, its host never asked for its document. */
  spelled: (did: string) => boolean,
): Promise<Resolution> {
  // Each actor's DID and the handle its document claims (a handle written resolves to a DID whose document may
  // claim another): both are what a reader may be shown for it.
  const actors = new Map<string, Promise<{ did: string; handle: string | null } | null>>();
  const whoIs = (actor: string) => {
    let known = actors.get(actor);
    if (!known) {
      known = (async () => {
        const did = isDid(actor) ? actor : await resolver.handleToDid(actor);
        if (did && spelled(did)) return { did, handle: null };
        const id = did ? await resolver.identity(did) : null;
        return did && id ? { did, handle: id.handle } : null;
      })();
      actors.set(actor, known);
    }
    return known;
  };
  const refs: Resolution['refs'] = new Map();
  const mentions: Resolution['mentions'] = new Map();
  const handles: NonNullable<Resolution['handles']> = new Map();
  await inBatches(accounts, async (a) => {
    const who = await whoIs(a);
    mentions.set(a, who?.did ?? null);
    if (who) handles.set(who.did, who.handle);
  });
  await inBatches(pointers, async (p) => {
    const who = await whoIs(p.actor);
    // A spelled DID's record is not fetched: the link is refused for its DID (its CID is never used).
    const found =
      who && spelled(who.did)
        ? { cid: '', shown: [] }
        : who
          ? await resolver.record(who.did, p.collection, p.rkey)
          : null;
    if (who) handles.set(who.did, who.handle);
    refs.set(
      pointerKey(p),
      who && found
        ? { uri: `at://${who.did}/${p.collection}/${p.rkey}`, cid: found.cid, shown: found.shown }
        : null,
    );
  });
  return { refs, mentions, handles };
}

async function inBatches<T>(items: T[], fn: (item: T) => Promise<void>, size = 8) {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}
