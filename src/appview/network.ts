import { AtpAgent } from '@atproto/api';
import { IdResolver } from '@atproto/identity';
import { jsonToLex } from '@atproto/lexicon';
import { isValidDid as isDid, isValidHandle } from '@atproto/syntax';
import { AVATAR_MAX_BYTES, isAvatarBytes, type PublishedAvatar } from '../lexicon/index.ts';
import { jsonRecordCid, lexRecordAsJson, type ShapeLimits, shapeProblem } from './shape.ts';

/**
 * A record looked up for a reader (a ref's target) is read within these, before it is parsed into lex values and
 * hashed, both on the main thread: any PDS can serve one, gzip-compressed to a few KB, and an anonymous read
 * makes up to 40 lookups. Past them the record is not checked ("unchecked"), never taken for deleted. A post is a
 * few KB; one of our turns, at the lexicon's most, about 150 KB of text.
 */
export const LOOKED_UP_MAX_BYTES = 512 * 1024;
export const LOOKED_UP_SHAPE: ShapeLimits = { depth: 32, nodes: 10_000, chars: LOOKED_UP_MAX_BYTES };

export interface NetworkOptions {
  /** An XRPC service that answers com.atproto.identity.resolveHandle (the local PDS offline). */
  handleResolver: string;
  plcUrl: string;
  /** Offline: plain http and loopback addresses are the network. */
  local: boolean;
  /** Every request to the network goes through the outbound policy (see outbound/). */
  fetch: typeof globalThis.fetch;
}

/** Reading the public network: handles, DID documents, and records from the PDS a DID names. */
export class Network {
  private ids: IdResolver | undefined;
  constructor(private readonly o: NetworkOptions) {}

  private resolver(): IdResolver {
    this.ids ??= new IdResolver({ plcUrl: this.o.plcUrl, fetch: this.o.fetch });
    return this.ids;
  }

  async didOf(actor: string): Promise<string | null> {
    if (isDid(actor)) return actor;
    try {
      const agent = new AtpAgent({ service: this.o.handleResolver, fetch: this.o.fetch });
      return (await agent.com.atproto.identity.resolveHandle({ handle: actor })).data.did;
    } catch {
      return null;
    }
  }

  /**
   * A DID's PDS and handle. The handle is the one its DID document claims only when that handle also resolves
   * back to this DID (bidirectional verification): a document can claim any name, so an unverified one is
   * never shown (null: readers see the DID).
   */
  async identity(did: string): Promise<{ did: string; handle: string | null; pds: string } | null> {
    try {
      const data = await this.resolver().did.resolveAtprotoData(did);
      if (!this.o.local && !data.pds.startsWith('https://')) return null;
      // A document may claim anything: a name that is not a handle at all is never shown (nor resolved).
      const claimed =
        isValidHandle(data.handle) && data.handle !== 'handle.invalid' ? data.handle.toLowerCase() : null;
      const handle = claimed && (await this.handleDid(claimed)) === did ? claimed : null;
      return { did, handle, pds: data.pds };
    } catch {
      return null;
    }
  }

  /** The PDS a DID's document names (https but offline), or null. */
  private async pdsOf(did: string): Promise<string | null> {
    try {
      const data = await this.resolver().did.resolveAtprotoData(did);
      return this.o.local || data.pds.startsWith('https://') ? data.pds : null;
    } catch {
      return null;
    }
  }

  /** Who a handle says it is: DNS and the well-known file (the local PDS offline, where `.test` lives). */
  private async handleDid(handle: string): Promise<string | null> {
    if (this.o.local) return this.didOf(handle);
    return (
      (await this.resolver()
        .handle.resolve(handle)
        .catch(() => undefined)) ?? null
    );
  }

  /** A repo's records, oldest first, at most `maxPages` pages of 100, until `signal` aborts. */
  async *listRecords(
    pds: string,
    did: string,
    collection: string,
    o: { maxPages?: number; signal?: AbortSignal } = {},
  ) {
    const agent = new AtpAgent({ service: pds, fetch: this.o.fetch });
    let cursor: string | undefined;
    for (let page = 0; page < (o.maxPages ?? Number.POSITIVE_INFINITY); page++) {
      o.signal?.throwIfAborted();
      const res = await agent.com.atproto.repo.listRecords(
        { repo: did, collection, limit: 100, cursor, reverse: true },
        { signal: o.signal },
      );
      // In the JSON form the index keeps, as the relay's records are: read as lex, a session whose agents have
      // pictures was refused as "not valid to its lexicon".
      for (const r of res.data.records) {
        const { record, refused } = lexRecordAsJson(r.value);
        yield { ...r, value: record, refused };
      }
      cursor = res.data.records.length === 100 ? res.data.cursor : undefined;
      if (!cursor) return;
    }
  }

  /**
   * A published agent's avatar (ADR 0065) from its author's PDS: the one the author's DID document names, the URL
   * built here (`getBlob` of that DID and the CID), never an address from a record. At most AVATAR_MAX_BYTES are
   * read, and the bytes must be the declared image type, size and CID (a PDS could serve anything). Null else.
   */
  async avatar(did: string, a: PublishedAvatar, signal?: AbortSignal): Promise<Uint8Array | null> {
    // Only the PDS is needed: the handle's check (DNS, a well-known file) would hold the fetch's slot for nothing.
    const pds = isDid(did) ? await this.pdsOf(did) : null;
    if (!pds || signal?.aborted) return null;
    try {
      const url = new URL('/xrpc/com.atproto.sync.getBlob', pds);
      url.searchParams.set('did', did);
      url.searchParams.set('cid', a.cid);
      const res = await this.o.fetch(url, { signal });
      if (!res.ok || !res.body) return null;
      const bytes = await readAtMost(res.body, AVATAR_MAX_BYTES);
      return bytes && (await isAvatarBytes(bytes, a)) ? bytes : null;
    } catch {
      return null;
    }
  }

  async record(uri: string): Promise<{ cid: string; value: unknown } | null> {
    const m = /^at:\/\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(uri);
    if (!m) return null;
    const did = await this.didOf(m[1]!);
    const id = did ? await this.identity(did) : null;
    // Its author's DID or PDS not found (a PLC or DNS failure as much as an account gone): not checked.
    if (!id) throw new Error('the record’s author could not be resolved');
    const url = new URL('/xrpc/com.atproto.repo.getRecord', id.pds);
    url.searchParams.set('repo', id.did);
    url.searchParams.set('collection', m[2]!);
    url.searchParams.set('rkey', m[3]!);
    const res = await this.o.fetch(url, { headers: { accept: 'application/json' } });
    // Deleted (the PDS's RecordNotFound); any other failure is thrown: the record could not be checked.
    if (!res.body) throw new Error(`getRecord answered ${res.status} with no body`);
    const bytes = await readAtMost(res.body, LOOKED_UP_MAX_BYTES);
    if (!bytes) throw new Error('record too large');
    const body = JSON.parse(new TextDecoder().decode(bytes)) as { value?: unknown; error?: unknown } | null;
    if (!res.ok) {
      if (res.status === 404 || body?.error === 'RecordNotFound') return null;
      throw new Error(`getRecord answered ${res.status}`);
    }
    const value = body?.value;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not a record');
    const problem = shapeProblem(value, LOOKED_UP_SHAPE);
    if (problem) throw new Error(`record ${problem}`);
    // The cid is the record's own hash, computed here: the record's PDS (anyone's) could serve other words
    // under the cid a ref pinned, and readers would be told the record is unchanged.
    const cid = (await jsonRecordCid(value)).toString();
    return { cid, value: jsonToLex(value as never) };
  }
}

/** A body read to its end, or null (the rest let go) as soon as it is past `max` bytes. */
async function readAtMost(body: ReadableStream<Uint8Array>, max: number): Promise<Uint8Array | null> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  return new Uint8Array(Buffer.concat(chunks));
}
