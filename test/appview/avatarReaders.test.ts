import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { TID } from '@atproto/common-web';
import { Secp256k1Keypair } from '@atproto/crypto';
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AVATAR_FETCHES_PER_AUTHOR, AVATAR_FETCHES_PER_READER } from '../../src/appview/avatars.ts';
import type { TestApp } from '../support/app.ts';
import { didDocument } from '../support/didWeb.ts';
import { startOfflineApp } from '../support/localnet.ts';
import { picture } from '../support/picture.ts';

const SESSION = 'click.aligned.chat.session';
let pictured = 0;
const MESSAGE = 'click.aligned.chat.message';

/**
 * An author on a PDS of their own (did:web): one served session whose two agents have pictures. With `hold`, the
 * PDS answers getBlob only once the test lets it; else at once, with the picture's bytes.
 */
async function author(hold?: Promise<void>) {
  const key = await Secp256k1Keypair.create();
  const pictures = await Promise.all(
    [1, 2].map(async (i) => {
      // Another picture each time: the CID names the content, and a kept one would be served without a fetch.
      const bytes = picture(pictured++ * 2 + i);
      return { bytes, cid: CID.createV1(0x55, await sha256.digest(bytes)).toString() };
    }),
  );
  const served = { blobs: 0 };
  const rkey = TID.nextStr();
  let did = '';
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/.well-known/did.json') {
      res.end(JSON.stringify(didDocument(did, key, base, 'painter.test')));
    } else if (url.pathname === '/xrpc/com.atproto.repo.listRecords') {
      const session = url.searchParams.get('collection') === SESSION;
      const value = {
        $type: SESSION,
        title: 'Portraits',
        createdAt: new Date().toISOString(),
        agents: pictures.map((p, i) => ({
          name: `Sitter ${i}`,
          avatar: { $type: 'blob', ref: { $link: p.cid }, mimeType: 'image/png', size: p.bytes.length },
        })),
      };
      const sessionUri = `at://${did}/${SESSION}/${rkey}`;
      const turn = {
        $type: MESSAGE,
        session: sessionUri,
        role: 'user',
        text: 'Hold still.',
        createdAt: value.createdAt,
      };
      const records = session
        ? [{ uri: sessionUri, cid: CID_OF_ANY, value }]
        : [{ uri: `at://${did}/${MESSAGE}/${TID.nextStr(rkey)}`, cid: CID_OF_ANY, value: turn }];
      res.end(JSON.stringify({ records }));
    } else if (url.pathname === '/xrpc/com.atproto.sync.getBlob') {
      served.blobs++;
      if (hold) await hold;
      const picture = pictures.find((p) => p.cid === url.searchParams.get('cid'));
      res.setHeader('content-type', 'application/octet-stream');
      res.end(picture?.bytes);
    } else {
      res.statusCode = 404;
      res.end(JSON.stringify({ error: 'NotFound' }));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://localhost:${(server.address() as AddressInfo).port}`;
  did = `did:web:localhost%3A${(server.address() as AddressInfo).port}`;
  return {
    did,
    rkey,
    served,
    pictures,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
const CID_OF_ANY = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';

let app: TestApp;
let release: () => void;
let authors: Awaited<ReturnType<typeof author>>[] = [];
beforeAll(async () => {
  // The avatar route counts fetches by reader address: the test names two readers through the proxy header.
  app = await startOfflineApp({ TRUSTED_PROXIES: '127.0.0.1/32' });
  const held = new Promise<void>((r) => {
    release = r;
  });
  // Enough stalling authors for one reader's share at each author's own bound, and one that answers.
  const stalling = AVATAR_FETCHES_PER_READER / AVATAR_FETCHES_PER_AUTHOR + 1;
  authors = [...(await Promise.all(Array.from({ length: stalling }, () => author(held)))), await author()];
}, 120_000);
afterAll(async () => {
  release?.();
  await Promise.all(authors.map((a) => a.close()));
  await app?.close();
});

const asking = (ip: string) => (path: string) =>
  fetch(`${app.running.listenUrl}${path}`, { headers: { 'X-Forwarded-For': ip } });

const avatarOf = (a: (typeof authors)[number], i: number) =>
  `/api/reader/avatars/${encodeURIComponent(a.did)}/${a.pictures[i]!.cid}`;

/** Each author's session read once (a backfill from their PDS), so their pictures are the index's to serve. */
async function backfilled() {
  for (const a of authors)
    await expect
      .poll(
        async () =>
          (await asking('203.0.113.7')(`/api/reader/threads/${encodeURIComponent(a.did)}/${a.rkey}`)).status,
        { timeout: 20_000 },
      )
      .toBe(200);
}

it('indexes a backfilled session whose agents have pictures, and serves a picture it names', async () => {
  // The XRPC client hands an author's records over as lex values (a BlobRef for each picture), which the index
  // once refused as "not valid to its lexicon": the thread was never found.
  await backfilled();
  const [row] = await app.db.sql<{ agents: { avatar: unknown }[] }[]>`
    select record->'agents' as agents from index_sessions where did = ${authors.at(-1)!.did}`;
  expect(row!.agents[0]!.avatar).toEqual({
    $type: 'blob',
    ref: { $link: authors.at(-1)!.pictures[0]!.cid },
    mimeType: 'image/png',
    size: authors.at(-1)!.pictures[0]!.bytes.length,
  });
  const res = await asking('203.0.113.7')(avatarOf(authors.at(-1)!, 0));
  expect(res.status).toBe(200);
  expect(new Uint8Array(await res.arrayBuffer())).toEqual(authors.at(-1)!.pictures[0]!.bytes);
});

it("lets one reader's asks hold at most its share of the avatar fetches; another reader still gets theirs", async () => {
  await backfilled();
  const attacker = asking('203.0.113.7');
  const victim = asking('198.51.100.9');
  expect(AVATAR_FETCHES_PER_READER).toBe(4);
  // The attacker asks for every picture of two stalling authors (each author's bound): its share, all started.
  const [first, second, third] = authors;
  const held = [first!, second!].flatMap((a) => [attacker(avatarOf(a, 0)), attacker(avatarOf(a, 1))]);
  await expect.poll(() => first!.served.blobs + second!.served.blobs, { timeout: 10_000 }).toBe(4);
  // One more of its asks, for a third author, is refused: no fetch is made.
  const refused = await attacker(avatarOf(third!, 0));
  expect(refused.status).toBe(503);
  expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('BUSY');
  expect(third!.served.blobs).toBe(0);
  // Another reader asking for the same picture gets a fetch of its own.
  const theirs = victim(avatarOf(third!, 0));
  await expect.poll(() => third!.served.blobs, { timeout: 10_000 }).toBe(1);
  release();
  expect((await theirs).status).toBe(200);
  await Promise.all(held);
});
