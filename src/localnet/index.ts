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
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
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
  /** Told what the PLC's database connections met that they outlived (a connection PostgreSQL dropped). */
  log?: (message: string, error?: unknown) => void;
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

  const db = plcDatabase(options.databaseUrl, options.log ?? (() => {}));
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

/**
 * The PLC's database, on a pool of our own: `plc.Database.postgres` makes its pool inside the package with no
 * 'error' listener, so PostgreSQL dropping one of its connections (a restart, a failover, idle_session_timeout)
 * threw out of the event loop and ended the server. Otherwise as that function builds it: the PLC's schema first
 * on the search path, and bigint counts read as numbers.
 */
export function plcDatabase(url: string, log: (message: string, error?: unknown) => void): plc.Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: 4,
    // Set as the connection starts: no query can run before it, and a connection it fails on is not used.
    options: '-c search_path=plc,public',
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === pg.types.builtins.INT8
          ? (n: string) => Number.parseInt(n, 10)
          : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // A connection's own listener, for its whole life: the pool listens only while it is idle, and a busy one
  // dropped (its query fails, as an answer) emits 'error' too. The pool makes a new one on the next query.
  pool.on('connect', (client) => {
    // Once per connection: a drop says so twice (PostgreSQL's message, then the socket's end).
    let said = false;
    client.on('error', (e) => {
      if (!said) log('a PLC database connection was dropped; the next query opens another', e);
      said = true;
    });
  });
  // Said once, by the connection's listener above.
  pool.on('error', () => {});
  // @did-plc/server's types name its own kysely (0.23); the query builder it calls is the same in this one.
  const kysely = new Kysely({ dialect: new PostgresDialect({ pool }) });
  return new plc.Database(kysely as unknown as ConstructorParameters<typeof plc.Database>[0], 'plc');
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
