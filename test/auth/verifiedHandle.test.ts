import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Secp256k1Keypair } from '@atproto/crypto';
import { Client as PlcClient } from '@did-plc/lib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createOAuthClient, upsertPlayer } from '../../src/auth/index.ts';
import { verifiedHandle } from '../../src/auth/routes.ts';
import { type LocalNetwork, startLocalNetwork } from '../../src/localnet/index.ts';
import { createDatabase, type TestDatabase } from '../support/database.ts';
import { freePort } from '../support/ports.ts';

// The handle a Player is stored and shown with is the network's, checked both ways: their DID document names it
// and it resolves back to their DID. What their PDS says of itself is never asked (a PDS its owner runs may
// claim `bsky.app`, or another Player's name, with handleIsCorrect: true).
let db: TestDatabase;
let dataDir: string;
let network: LocalNetwork;

beforeAll(async () => {
  db = await createDatabase(process.env.TEST_DATABASE_URL!);
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'av-handle-'));
  network = await startLocalNetwork({
    dataDir,
    databaseUrl: db.url,
    pdsPort: await freePort(),
    plcPort: await freePort(),
    demoAccounts: ['alice', 'bob'],
  });
}, 120_000);
afterAll(async () => {
  await network?.close();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

const oauthClient = () =>
  createOAuthClient(db.sql, {
    baseUrl: 'http://127.0.0.1:1',
    privateKeys: [],
    handleResolver: network.pdsUrl,
    plcUrl: network.plcUrl,
    allowHttp: true,
  });

it('is the handle the DID document names and that resolves back, never one another account holds', async () => {
  const [alice, bob] = ['alice.test', 'bob.test'].map((h) => network.accounts.find((a) => a.handle === h)!);
  expect(await verifiedHandle(await oauthClient(), alice!.did)).toBe('alice.test');
  expect(await verifiedHandle(await oauthClient(), bob!.did)).toBe('bob.test');

  // Bob's DID document made to claim Alice's handle, signed with the PLC rotation key the local PDS holds: the
  // handle resolves to Alice, not to Bob, so Bob has no handle to be shown with.
  const secrets = JSON.parse(await readFile(path.join(dataDir, 'atproto', 'secrets.json'), 'utf8'));
  const key = await Secp256k1Keypair.import(secrets.plcRotationKeyHex);
  const plc = new PlcClient(network.plcUrl);
  await plc.updateHandle(bob!.did, key, 'alice.test');
  expect((await plc.getDocumentData(bob!.did)).alsoKnownAs).toEqual(['at://alice.test']);
  const bobs = await verifiedHandle(await oauthClient(), bob!.did);
  expect(bobs).toBeNull();
  // A name stored before (unverified, from a PDS's say-so) is cleared by it, not kept.
  await upsertPlayer(db.sql, bob!.did, 'bsky.app');
  expect((await upsertPlayer(db.sql, bob!.did, bobs)).handle).toBeNull();
  // A DID document that cannot be read just now says nothing either way: the stored name is kept.
  const unknown = await verifiedHandle(await oauthClient(), 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa');
  expect(unknown).toBeUndefined();
  await upsertPlayer(db.sql, bob!.did, 'bob.test');
  expect((await upsertPlayer(db.sql, bob!.did, unknown)).handle).toBe('bob.test');
  expect(await verifiedHandle(await oauthClient(), alice!.did)).toBe('alice.test');
}, 60_000);
