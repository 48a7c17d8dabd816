// localnet/: offline mode. A real PLC and PDS (from @atproto/dev-env) in-process, with demo accounts, kept
// under DATA_DIR across restarts: the PLC's operations live in PostgreSQL (schema "plc"), the PDS's
// repositories and blobs in DATA_DIR/atproto, and the keys that must not change in DATA_DIR/atproto/secrets.json.
// Both listen on 127.0.0.1 only (loopback.ts): offline mode is for this machine.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AtpAgent } from '@atproto/api';
import { Secp256k1Keypair } from '@atproto/crypto';
import { PDS } from '@atproto/pds';
import * as plc from '@did-plc/server';
import { freeLoopbackPort, listenOnLoopback } from './loopback.ts';

export interface DemoAccount {
  handle: string;
  password: string;
  did: string;
}

export interface LocalNetwork {
  pdsUrl: string;
  plcUrl: string;
  /** The local PDS's admin password (offline mode only; tests take accounts down with it). */
  adminPassword: string;
  accounts: DemoAccount[];
  close(): Promise<void>;
}

export interface LocalNetworkOptions {
  dataDir: string;
  databaseUrl: string;
  pdsPort: number;
  plcPort: number;
  demoAccounts: string[];
}

interface Secrets {
  plcRotationKeyHex: string;
  recoveryDidKey: string;
  jwtSecret: string;
  adminPassword: string;
  passwords: Record<string, string>;
}

export async function startLocalNetwork(options: LocalNetworkOptions): Promise<LocalNetwork> {
  const root = path.resolve(options.dataDir, 'atproto');
  await mkdir(path.join(root, 'blobs'), { recursive: true });
  const secrets = await loadSecrets(path.join(root, 'secrets.json'), options.demoAccounts);

  const db = plc.Database.postgres({ url: options.databaseUrl, schema: 'plc' });
  await db.migrateToLatestOrThrow();
  // As @atproto/dev-env's TestPlc and TestPds, whose `create` also listens, on every interface: so built here.
  const plcPort = options.plcPort || (await freeLoopbackPort());
  const pdsPort = options.pdsPort || (await freeLoopbackPort());
  const plcServer = plc.PlcServer.create({ db, port: plcPort });
  listenOnLoopback(plcServer.app);
  await plcServer.start();
  // Named localhost as dev-env names it (the OAuth client's DID resolution refuses an IP address as a host).
  const plcUrl = `http://localhost:${plcPort}`;
  // The PDS URL is written into every account's DID document, so its port must stay the same across restarts.
  // Its host stays "localhost": a PDS named anything else is an https one (its issuer, its DID documents).
  const pds = await PDS.fromEnv({
    devMode: true,
    port: pdsPort,
    didPlcUrl: plcUrl,
    dataDirectory: root,
    blobstoreDiskLocation: path.join(root, 'blobs'),
    plcRotationKeyK256PrivateKeyHex: secrets.plcRotationKeyHex,
    recoveryDidKey: secrets.recoveryDidKey,
    jwtSecret: secrets.jwtSecret,
    adminPassword: secrets.adminPassword,
    serviceHandleDomains: ['.test'],
    bskyAppViewUrl: 'https://appview.invalid',
    bskyAppViewDid: 'did:example:invalid',
    modServiceUrl: 'https://moderator.invalid',
    modServiceDid: 'did:example:invalid',
    inviteRequired: false,
    disableSsrfProtection: true,
    serviceName: 'AgentsVille local PDS',
  });
  listenOnLoopback(pds.app);
  await pds.start();
  const pdsUrl = `http://localhost:${pdsPort}`;

  const agent = new AtpAgent({ service: pdsUrl });
  const accounts: DemoAccount[] = [];
  for (const name of options.demoAccounts) {
    const handle = `${name}.test`;
    const password = secrets.passwords[name]!;
    const existing = await agent.com.atproto.identity.resolveHandle({ handle }).catch(() => undefined);
    const did =
      existing?.data.did ??
      (await agent.com.atproto.server.createAccount({ handle, password, email: `${name}@agentsville.test` }))
        .data.did;
    accounts.push({ handle, password, did });
  }

  return {
    pdsUrl,
    plcUrl,
    adminPassword: secrets.adminPassword,
    accounts,
    async close() {
      await pds.destroy();
      await plcServer.destroy();
    },
  };
}

async function loadSecrets(file: string, names: string[]): Promise<Secrets> {
  let secrets: Secrets | undefined;
  try {
    secrets = JSON.parse(await readFile(file, 'utf8')) as Secrets;
  } catch {
    const rotation = await Secp256k1Keypair.create({ exportable: true });
    secrets = {
      plcRotationKeyHex: Buffer.from(await rotation.export()).toString('hex'),
      recoveryDidKey: (await Secp256k1Keypair.create()).did(),
      jwtSecret: randomBytes(32).toString('hex'),
      adminPassword: randomBytes(16).toString('hex'),
      passwords: {},
    };
  }
  let changed = false;
  for (const name of names) {
    if (!secrets.passwords[name]) {
      secrets.passwords[name] = `${name}-${randomBytes(4).toString('hex')}`;
      changed = true;
    }
  }
  if (changed) await writeFile(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return secrets;
}
