import { getServiceEndpoint, getVerificationMaterial } from '@atproto/common-web';
import { verifySignature } from '@atproto/crypto';
import { getDidKeyFromMultibase, IdResolver } from '@atproto/identity';
import { type Label, signedBytes } from './label.ts';

/** A labeler's key is looked up again after a signature fails at most this often (a key rotation). */
const REFRESH_MS = 60_000;

export interface Labeler {
  did: string;
  /** The labeler's service (https://…); subscribeLabels is under it. */
  endpoint: string;
}

/**
 * A labeler's DID document: its `#atproto_label` key (labels are signed with it) and its `#atproto_labeler`
 * service. Read through the network's outbound fetch; the key is kept, and looked up again (at most once a
 * minute) when a label does not verify against it, so a labeler that rotated its key is followed.
 */
export class LabelerKeys {
  private readonly ids: IdResolver;
  private readonly keys = new Map<string, { key: string | null; at: number }>();

  /** Offline, a labeler's service may be plain http on loopback; on the public network only https is followed. */
  private readonly local: boolean;

  constructor(o: { plcUrl: string; fetch: typeof globalThis.fetch; local: boolean }) {
    this.ids = new IdResolver({ plcUrl: o.plcUrl, fetch: o.fetch });
    this.local = o.local;
  }

  /** The service to subscribe to: the configured one, or the one the labeler's DID document names. */
  async endpoint(did: string, configured?: string): Promise<string | null> {
    if (configured) return configured;
    const doc = await this.ids.did.resolve(did);
    const found = doc
      ? getServiceEndpoint(doc, { id: '#atproto_labeler', type: 'AtprotoLabeler' })
      : undefined;
    // The socket is opened to whatever the document names, outside the outbound fetch's address policy: on the
    // public network it must at least be https (the operator's own `did|url` is taken as configured).
    if (!found || (!this.local && !found.startsWith('https://'))) return null;
    return found;
  }

  private async key(did: string, fresh: boolean): Promise<string | null> {
    const known = this.keys.get(did);
    if (known && (!fresh || Date.now() - known.at < REFRESH_MS)) return known.key;
    const doc = await this.ids.did.resolve(did, fresh).catch(() => null);
    const material = doc ? getVerificationMaterial(doc, 'atproto_label') : undefined;
    const key = material ? (getDidKeyFromMultibase(material) ?? null) : null;
    this.keys.set(did, { key, at: Date.now() });
    return key;
  }

  /** True when `label` is signed by its labeler's current label key (`src` must be the labeler's DID). */
  async verify(labeler: string, label: Label): Promise<boolean> {
    if (label.src !== labeler) return false;
    const bytes = signedBytes(label);
    const check = async (key: string | null) =>
      key !== null && (await verifySignature(key, bytes, label.sig).catch(() => false));
    const cached = await this.key(labeler, false);
    if (await check(cached)) return true;
    const fresh = await this.key(labeler, true);
    return fresh !== cached && (await check(fresh));
  }
}
