import { AtpAgent, XRPCError } from '@atproto/api';
import { TID } from '@atproto/common-web';
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexRecords, removeRecord } from '../../src/appview/index.ts';
import { Network } from '../../src/appview/network.ts';
import {
  AVATAR_MAX_BYTES,
  assertValidRecord,
  avatarBlob,
  avatarFromFacts,
  avatarJson,
  isValidRecord,
  readAvatar,
  SESSION,
  sniffImage,
} from '../../src/lexicon/index.ts';
import { uploadAvatars } from '../../src/publish/avatars.ts';
import { writeFailure } from '../../src/publish/execute.ts';
import { projectSession } from '../../src/publish/projection.ts';
import type { Repo, RepoWrite } from '../../src/publish/repo.ts';
import { makeCover } from '../../src/redaction/index.ts';
import { giveAvatar } from '../support/avatar.ts';
import { insertConversation } from '../support/conversations.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { picture } from '../support/picture.ts';

// A published agent's avatar (ADR 0065): a blob referenced from the session record, only an accepted image within
// the lexicon's size, its reference the one the PDS gives on upload, and validated in the JSON form records travel in.
const bytes = (...b: number[]) => new Uint8Array([...b, ...new Array(16).fill(0)]);

describe('the avatar, pure', () => {
  it('only PNG, JPEG, WebP and GIF, by their bytes; at most the lexicon’s size', async () => {
    expect(sniffImage(picture())).toBe('image/png');
    expect(sniffImage(bytes(0xff, 0xd8, 0xff, 0xe0))).toBe('image/jpeg');
    expect(sniffImage(bytes(0x47, 0x49, 0x46, 0x38, 0x39, 0x61))).toBe('image/gif');
    expect(sniffImage(bytes(0x52, 0x49, 0x46, 0x46, 1, 2, 3, 4, 0x57, 0x45, 0x42, 0x50))).toBe('image/webp');
    for (const text of ['<svg xmlns="http://www.w3.org/2000/svg"/>', '<html><script>x</script>', ''])
      expect(await avatarBlob(new TextEncoder().encode(text))).toBeUndefined();
    const big = new Uint8Array(AVATAR_MAX_BYTES + 1);
    big.set(picture());
    expect(await avatarBlob(big)).toBeUndefined();
    expect(await avatarBlob(big.subarray(0, AVATAR_MAX_BYTES))).toMatchObject({ size: AVATAR_MAX_BYTES });
  });

  it('the reference from the stored hash, size and first bytes is the one the bytes give', async () => {
    const { createHash } = await import('node:crypto');
    for (const image of [picture(), Buffer.from([0xff, 0xd8, 0xff, 0xe0, ...new Array(40).fill(7)])]) {
      const facts = {
        sha256: createHash('sha256').update(image).digest(),
        size: image.length,
        head: image.subarray(0, 16),
      };
      expect(avatarFromFacts(facts)).toEqual(await avatarBlob(image));
    }
    const png = picture();
    const sha = createHash('sha256').update(png).digest();
    expect(
      avatarFromFacts({ sha256: sha, size: AVATAR_MAX_BYTES + 1, head: png.subarray(0, 16) }),
    ).toBeUndefined();
    expect(avatarFromFacts({ sha256: sha, size: png.length, head: Buffer.from('<svg') })).toBeUndefined();
  });

  it('a reader takes a record’s avatar only when it is a raw blob of an accepted type and size', async () => {
    const a = (await avatarBlob(picture()))!;
    expect(readAvatar(avatarJson(a))).toEqual(a);
    const bad = [
      { ...avatarJson(a), mimeType: 'image/svg+xml' },
      { ...avatarJson(a), mimeType: 'text/html' },
      { ...avatarJson(a), size: AVATAR_MAX_BYTES + 1 },
      { ...avatarJson(a), size: -1 },
      { ...avatarJson(a), ref: { $link: 'https://example.com/x.png' } },
      // A dag-cbor CID (a record's, not a blob's).
      { ...avatarJson(a), ref: { $link: 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm' } },
      { ...avatarJson(a), $type: 'link' },
      'https://example.com/x.png',
      null,
    ];
    for (const v of bad) expect(readAvatar(v)).toBeUndefined();
  });

  it('the session record carries the avatar only for an agent given one, never covered, and is valid', async () => {
    const a = (await avatarBlob(picture()))!;
    const record = projectSession({
      title: 'Maps',
      createdAt: new Date('2026-11-01T09:00:00Z'),
      agents: [
        { name: 'Ada', jobTitle: 'Librarian', model: null, avatar: a },
        { name: 'Bo', jobTitle: '', model: null },
      ],
      // A covered word that is also the image type's: structure is not words.
      cover: makeCover(['png']),
    });
    expect(record.agents).toEqual([
      { name: 'Ada', role: 'Librarian', avatar: avatarJson(a) },
      { name: 'Bo' },
    ]);
    assertValidRecord(SESSION, record);
    expect(isValidRecord(SESSION, record)).toBe(true);
    // A $link that is not a CID is an invalid record, not a thrown error.
    const broken = {
      ...record,
      agents: [{ name: 'Ada', avatar: { ...avatarJson(a), ref: { $link: 'x' } } }],
    };
    expect(isValidRecord(SESSION, broken)).toBe(false);
  });
});

describe('the avatar on the dev-env PDS', () => {
  let local: LocalApp;
  beforeAll(async () => {
    local = await startLocalApp();
  }, 120_000);
  afterAll(() => local?.close());

  it('the reference projected before the upload is the PDS’s own; the record is stored and the blob served', async () => {
    const net = local.app.running.localnet!;
    const bob = net.accounts.find((x) => x.handle === 'bob.test')!;
    const agent = new AtpAgent({ service: net.pdsUrl });
    await agent.login({ identifier: bob.handle, password: bob.password });
    const image = picture();
    const a = (await avatarBlob(image))!;
    const uploaded = await agent.com.atproto.repo.uploadBlob(image, { encoding: a.mimeType });
    expect({
      cid: uploaded.data.blob.ref.toString(),
      mimeType: uploaded.data.blob.mimeType,
      size: uploaded.data.blob.size,
    }).toEqual(a);
    const record = projectSession({
      title: 'Maps',
      createdAt: new Date(),
      agents: [{ name: 'Ada', jobTitle: '', model: null, avatar: a }],
      cover: makeCover([]),
    });
    const put = await agent.com.atproto.repo.putRecord({
      repo: bob.did,
      collection: SESSION,
      rkey: '3kaaaaaaaaaa2',
      record: record as never,
    });
    expect(put.success).toBe(true);
    const got = await fetch(
      `${net.pdsUrl}/xrpc/com.atproto.repo.getRecord?repo=${bob.did}&collection=${SESSION}&rkey=3kaaaaaaaaaa2`,
    );
    const { value } = (await got.json()) as { value: { agents: unknown[] } };
    expect(isValidRecord(SESSION, value)).toBe(true);
    expect(readAvatar((value.agents[0] as { avatar: unknown }).avatar)).toEqual(a);
    const blob = await fetch(`${net.pdsUrl}/xrpc/com.atproto.sync.getBlob?did=${bob.did}&cid=${a.cid}`);
    expect(blob.status).toBe(200);
    expect(new Uint8Array(await blob.arrayBuffer())).toEqual(image);

    // The reader's fetch: from the PDS bob's DID document names, checked against the reference.
    const network = new Network({
      handleResolver: net.pdsUrl,
      plcUrl: net.plcUrl,
      local: true,
      fetch,
    });
    expect(await network.avatar(bob.did, a)).toEqual(image);
    // A reference the bytes do not match (another type claimed, another size), or a DID that is not one: nothing.
    expect(await network.avatar(bob.did, { ...a, mimeType: 'image/jpeg' })).toBeNull();
    expect(await network.avatar(bob.did, { ...a, size: a.size + 1 })).toBeNull();
    expect(await network.avatar('did:web:127.0.0.1%3A1', a)).toBeNull();
    // A blob past the limit (the PDS takes it; a record may claim it is small) is not read past 1,000,000 bytes.
    const huge = new Uint8Array(AVATAR_MAX_BYTES + 200_000);
    huge.set(image);
    await agent.com.atproto.repo.uploadBlob(huge, { encoding: 'image/png' });
    const hugeCid = CID.createV1(0x55, await sha256.digest(huge)).toString();
    expect(
      await network.avatar(bob.did, { cid: hugeCid, mimeType: 'image/png', size: AVATAR_MAX_BYTES }),
    ).toBeNull();
  });

  it('a sign-in without the picture permission is told to sign in again, and the write is refused, not retried', async () => {
    const { app } = local;
    const alice = await local.signInAs('alice.test');
    const { npcId } = await insertConversation(app.db.sql, alice.playerId, {
      title: 'Scopes',
      npc: { name: 'Ada', jobTitle: 'Librarian' },
      turns: [{ role: 'player', parts: [{ type: 'text', text: 'Hello' }] }],
    });
    const image = picture();
    await giveAvatar(app.db.sql, npcId, image);
    const a = (await avatarBlob(image))!;
    let asked = 0;
    // The PDS's answer to a token whose scope predates `blob:image/*`.
    const repo = {
      uploadBlob: async () => {
        asked++;
        throw new XRPCError(403, 'InvalidToken', 'Missing required scope "blob:image/png"');
      },
    } as unknown as Repo;
    const batch = [
      {
        action: 'create',
        collection: SESSION,
        rkey: 'x',
        value: { agents: [{ name: 'Ada', avatar: avatarJson(a) }] },
      },
    ] as unknown as RepoWrite[];
    const e = await uploadAvatars(app.db.sql, repo, batch).catch((x: unknown) => x);
    expect(asked).toBe(1);
    expect((e as Error).message).toMatch(/sign out and sign in again, or untick/);
    expect(writeFailure(e)).toBe('refused');
  });

  it('publishing with the tick uploads the picture and the reader serves it; without it, none; only a referenced CID', async () => {
    const { app } = local;
    const net = app.running.localnet!;
    const alice = await local.signInAs('alice.test');
    const { conversationId, npcId } = await insertConversation(app.db.sql, alice.playerId, {
      title: 'Portraits',
      npc: { name: 'Ada', jobTitle: 'Librarian' },
      turns: [
        { role: 'player', parts: [{ type: 'text', text: 'Who are you?' }] },
        { role: 'npc', parts: [{ type: 'text', text: 'The librarian.' }] },
      ],
    });
    const image = picture();
    await giveAvatar(app.db.sql, npcId, image);
    const a = (await avatarBlob(image))!;
    const api = (path: string, body: unknown, method = 'PUT') =>
      app.api(`/api/conversations/${conversationId}/publication${path}`, {
        method,
        cookie: alice.cookie,
        body,
      });
    const served = (cid: string, did = alice.did) => fetch(`${app.url}/api/reader/avatars/${did}/${cid}`);
    const sessionOnPds = async (uri: string) => {
      const got = await fetch(
        `${net.pdsUrl}/xrpc/com.atproto.repo.getRecord?repo=${alice.did}&collection=${SESSION}&rkey=${uri.split('/').pop()}`,
      );
      return ((await got.json()) as { value: { agents: Record<string, unknown>[] } }).value;
    };

    // The preview shows the picture beside its tick; the tick is off by default.
    const preview = await api('/preview', {}, 'POST');
    expect(preview.status).toBe(200);
    const shown = (await preview.json()) as {
      agents: { npcId: string; avatarUrl: string | null }[];
      records: { collection: string; record: { agents: unknown[] } }[];
    };
    expect(shown.agents[0]).toMatchObject({ npcId, avatarUrl: expect.stringMatching(/^\/api\/npcs\//) });
    expect(shown.records.find((r) => r.collection === SESSION)!.record.agents).toEqual([
      { name: 'Ada', role: 'Librarian' },
    ]);

    // Not ticked: no avatar in the record, and the reader serves nothing for it.
    const plain = await api('', {});
    expect(plain.status).toBe(200);
    const { uri } = (await plain.json()) as { uri: string };
    expect((await sessionOnPds(uri)).agents).toEqual([{ name: 'Ada', role: 'Librarian' }]);
    expect((await served(a.cid)).status).toBe(404);

    // Ticked: the session record (an update) holds the blob, uploaded first, and the reader serves its bytes.
    const ticked = await api('', { agents: { [npcId]: { avatar: true } } });
    expect(ticked.status).toBe(200);
    const agents = (await sessionOnPds(uri)).agents;
    expect(agents[0]).toEqual({ name: 'Ada', role: 'Librarian', avatar: avatarJson(a) });
    const res = await served(a.cid);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'");
    expect(res.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(image);
    // Again, from the cache: the same bytes.
    expect(new Uint8Array(await (await served(a.cid)).arrayBuffer())).toEqual(image);

    // Published again with a change: the record is rewritten with the avatar, uploaded again (idempotent).
    const again = await api('', { agents: { [npcId]: { avatar: true, description: 'Keeps the maps.' } } });
    expect(again.status).toBe(200);
    expect((await sessionOnPds(uri)).agents[0]).toMatchObject({ avatar: avatarJson(a) });

    // No open proxy: a blob on the PDS that no indexed session references, an author who references none, a
    // malformed CID.
    const other = new Uint8Array([...image, 0]);
    const agent = new AtpAgent({ service: net.pdsUrl });
    const bob = net.accounts.find((x) => x.handle === 'bob.test')!;
    await agent.login({ identifier: bob.handle, password: bob.password });
    const loose = await agent.com.atproto.repo.uploadBlob(other, { encoding: 'image/png' });
    expect((await served(loose.data.blob.ref.toString(), bob.did)).status).toBe(404);
    expect((await served(a.cid, 'did:plc:zzzzzzzzzzzzzzzzzzzzzzzz')).status).toBe(404);
    expect((await served('not-a-cid')).status).toBe(404);

    // The tick taken off: the record no longer references it, and the reader no longer serves it.
    const off = await api('', { agents: { [npcId]: { avatar: false } } });
    expect(off.status).toBe(200);
    expect((await sessionOnPds(uri)).agents).toEqual([{ name: 'Ada', role: 'Librarian' }]);
    expect((await served(a.cid)).status).toBe(404);
  }, 60_000);

  // The stream may bring a commit's event after a later publish's write-through (CI saw the untick's event undo
  // the tick). Each record written through carries its commit's rev, so the older event is refused.
  it('an event of an older version arriving after a publish does not undo it, nor bring back an unpublished thread', async () => {
    const { app } = local;
    const sql = app.db.sql;
    const alice = await local.signInAs('alice.test');
    const { conversationId, npcId } = await insertConversation(sql, alice.playerId, {
      title: 'Late events',
      npc: { name: 'Ada', jobTitle: 'Librarian' },
      turns: [
        { role: 'player', parts: [{ type: 'text', text: 'Who are you?' }] },
        { role: 'npc', parts: [{ type: 'text', text: 'The librarian.' }] },
      ],
    });
    await giveAvatar(sql, npcId, picture());
    const a = (await avatarBlob(picture()))!;
    const publish = (body: unknown, method = 'PUT') =>
      app.api(`/api/conversations/${conversationId}/publication`, { method, cookie: alice.cookie, body });
    const stored = async () =>
      (
        await sql<{ rkey: string; cid: string; record: unknown; rev: string | null }[]>`
          select rkey, cid, record, rev from publication_records
          where conversation_id = ${conversationId} and collection = ${SESSION}`
      )[0]!;
    const indexed = async (uri: string) =>
      (await sql<{ cid: string }[]>`select cid from index_sessions where uri = ${uri}`)[0]?.cid ?? null;

    const plain = await publish({});
    expect(plain.status).toBe(200);
    const { uri } = (await plain.json()) as { uri: string };
    const first = await stored();
    expect(first.rev).toMatch(/^[a-z2-7]{13}$/);
    expect((await publish({ agents: { [npcId]: { avatar: true } } })).status).toBe(200);
    const second = await stored();
    expect(second.rev! > first.rev!).toBe(true);
    expect(await indexed(uri)).toBe(second.cid);

    // The untick's event, late: as the stream's batcher indexes it.
    const late = {
      did: alice.did,
      collection: SESSION,
      rkey: first.rkey,
      cid: first.cid,
      record: first.record,
    };
    await indexRecords(sql, null, [{ ...late, rev: first.rev! }]);
    expect(await indexed(uri)).toBe(second.cid);
    expect((await served(a.cid)).status).toBe(200);

    // Unpublished, then the tick's own event arrives: the thread stays gone.
    expect((await publish(undefined, 'DELETE')).status).toBe(204);
    expect(await indexed(uri)).toBeNull();
    await indexRecords(sql, null, [{ ...late, cid: second.cid, record: second.record, rev: second.rev! }]);
    expect(await indexed(uri)).toBeNull();
    // A newer commit of the same record (the author wrote it again elsewhere) is taken.
    const newer = TID.nextStr();
    await indexRecords(sql, null, [{ ...late, cid: second.cid, record: second.record, rev: newer }]);
    expect(await indexed(uri)).toBe(second.cid);
    // A delete older than that version, arriving late, leaves it; a newer one takes it.
    await removeRecord(sql, uri, second.rev!);
    expect(await indexed(uri)).toBe(second.cid);
    await removeRecord(sql, uri, TID.nextStr());
    expect(await indexed(uri)).toBeNull();

    function served(cid: string) {
      return fetch(`${app.url}/api/reader/avatars/${alice.did}/${cid}`);
    }
  }, 60_000);
});
