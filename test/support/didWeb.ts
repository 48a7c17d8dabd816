import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Secp256k1Keypair } from '@atproto/crypto';
import { cidForRecord } from '@atproto/repo';

/**
 * A host someone else runs, named by a did:web (did:web:localhost%3A<port>): it serves its DID document and
 * answers getRecord for any rkey as its own PDS (`served`), and counts every request it is sent — a test proves what the
 * server asked of it, and when. A reachable stand-in for an attacker's host.
 */
export async function didWebHost() {
  const key = await Secp256k1Keypair.create();
  const requests: string[] = [];
  let did = '';
  let base = '';
  // What getRecord answers: a record under its own CID, unless a test has the host lie.
  const served = { value: RECORD as Record<string, unknown>, cid: RECORD_CID };
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '/');
    const url = new URL(req.url ?? '/', 'http://x');
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/.well-known/did.json') {
      res.end(JSON.stringify(didDocument(did, key, base, 'host.test')));
      return;
    }
    if (url.pathname === '/xrpc/com.atproto.repo.getRecord') {
      const uri = `at://${did}/${url.searchParams.get('collection')}/${url.searchParams.get('rkey')}`;
      res.end(JSON.stringify({ uri, cid: served.cid, value: served.value }));
      return;
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ error: 'NotFound' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  base = `http://localhost:${port}`;
  did = `did:web:localhost%3A${port}`;
  return {
    did,
    /** Every request path (with its query) the host was sent, in order. */
    requests,
    /** What getRecord answers, for any rkey: a test may set another value, or a CID that is not its hash. */
    served,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A did:web's DID document naming `key`, a handle it claims and its PDS at `pds`. */
export function didDocument(did: string, key: Secp256k1Keypair, pds: string, handle: string) {
  return {
    '@context': ['https://www.w3.org/ns/did/v1'],
    id: did,
    alsoKnownAs: [`at://${handle}`],
    verificationMethod: [
      { id: `${did}#atproto`, type: 'Multikey', controller: did, publicKeyMultibase: key.did().slice(8) },
    ],
    service: [{ id: '#atproto_pds', type: 'AtprotoPersonalDataServer', serviceEndpoint: pds }],
  };
}

/** The record the host serves for any rkey, and its CID (its hash, as a PDS would give it). */
const RECORD = { text: 'a post' };
export const RECORD_CID = (await cidForRecord(RECORD)).toString();
