import http from 'node:http';
import path from 'node:path';
import type { NodeOAuthClient } from '@atproto/oauth-client-node';
import { Network, setLookupTtl } from './appview/index.ts';
import { referBlobsFrom } from './attachments/index.ts';
import { createOAuthClient } from './auth/index.ts';
import type { Config } from './config.ts';
import { markInterrupted } from './conversations/index.ts';
import {
  connect,
  HELD_CONNECTIONS,
  Leases,
  migrate,
  registerInstance,
  type Sql,
  startEmbeddedPostgres,
} from './db/index.ts';
import type { LocalNetwork } from './localnet/index.ts';
import { createLogger, type LogFn, type Logger, subsystemLog } from './log/index.ts';
import { createOutbound, type Outbound, type Resolve, type SocketPolicy } from './outbound/index.ts';
import { ensurePortFree, portError } from './portCheck.ts';
import { turnEnded } from './publish/index.ts';
import { ReplyHub, ReplyMirror } from './replies/index.ts';
import { sandboxFileRefersTo, stopSandboxes } from './tools/index.ts';
import {
  DEMO_MODEL,
  DEMO_PROVIDER,
  localSecretsKey,
  ProviderRegistry,
  refreshProviderKeys,
  SecretBox,
  seedVillageDefaults,
} from './village/index.ts';

/** What tests and benchmarks change in a context (ADR 0067: they build theirs with overrides). */
export interface StartOptions {
  /** Sees every SQL statement the server sends; the benchmark counts them. */
  onQuery?: (query: string) => void;
  /** The fetch the OAuth client uses (tests count token refreshes through it). */
  oauthFetch?: typeof globalThis.fetch;
  /** How outbound requests resolve hostnames (tests inject answers, e.g. one that changes between calls). */
  resolve?: Resolve;
  /** Tests shorten the labelers' reconnect back-off and leader retry. */
  labels?: { backoffFirstMs?: number; retryMs?: number };
}

/** The ATProto network this instance talks to, resolved once: the local one in offline mode, else the config's. */
export interface AtNetwork {
  kind: 'local' | 'public';
  /** Where did:plc documents resolve. */
  plcUrl: string;
  /** An XRPC service answering com.atproto.identity.resolveHandle. */
  handleResolverUrl: string;
  /** The PDS this process runs (offline mode only): the AppView follows it when no relay is configured. */
  pdsUrl?: string;
  /** The network is on loopback: plain http and private addresses are the network (offline mode). */
  local: boolean;
}

/** Everything the app and its background jobs use, each made once by `fromConfig` (the shape of @atproto/pds's). */
export interface AppContext {
  config: Config;
  logger: Logger;
  options: StartOptions;
  sql: Sql;
  instanceId: number;
  /** Locks held while a Player's own servers are waited on (ADR 0054). */
  leases: Leases;
  localnet?: LocalNetwork;
  network: AtNetwork;
  /** Outbound requests (outbound/): MCP Servers, pages attached by URL, and the ATProto network's fetch. */
  outbound: {
    tools: Outbound;
    pages: Outbound;
    network: typeof globalThis.fetch;
    networkSockets: SocketPolicy;
  };
  providers: ProviderRegistry;
  /** Opens and seals the Provider keys added in the app; absent: none can be stored. */
  secrets?: SecretBox;
  adminDids: string[];
  /** Bound and listening; answers 503 until `serve` attaches the app. */
  server: http.Server;
  /** Where this process listens. */
  listenUrl: string;
  /** Where browsers reach the server (the public URL when one is configured). */
  baseUrl: string;
  /** Replies in flight on this process, and their mirror to other instances. */
  hub: ReplyHub;
  mirror: ReplyMirror;
  oauth: NodeOAuthClient;
  /** Reads published threads from the network for the reader. */
  reader: Network;
  /**
   * The one value that changes once built: set when shutting down, read by /readyz on every request. A field
   * of a shared object, not a getter, so whoever holds the context sees it.
   */
  state: { draining: boolean };
  /** Closes what `fromConfig` opened, last opened first. */
  close(): Promise<void>;
}

type Closer = () => unknown;

/**
 * Builds the context in order: database (embedded when DATABASE_URL is unset), migrations, this instance, the
 * local network in offline mode, the network's values, outbound clients, Provider keys, the socket bound (so the
 * URL is known), replies' hub and mirror, the OAuth client for that URL. A step that fails closes the ones
 * before it.
 */
export async function fromConfig(
  config: Config,
  logger: Logger = createLogger(config.log),
  options: StartOptions = {},
): Promise<AppContext> {
  const log = subsystemLog(logger, 'server');
  // What refers to blobs from a room attachments/ may not import: a blob is collected once nothing does.
  referBlobsFrom(sandboxFileRefersTo);
  const closers: Closer[] = [];
  const close = async () => {
    for (let c = closers.pop(); c; c = closers.pop()) await c();
  };
  try {
    await checkPorts(config);
    const db = await openDatabase(config, options, log, closers);
    const localnet = await startLocalnet(config, db.url, closers, log);
    const network = resolveNetwork(config, localnet);
    const outbound = outboundClients(config, options, network);
    const keys = await loadProviderKeys(config, db.sql);
    // Sandboxes start on request; they stop once the server no longer takes any.
    closers.push(stopSandboxes);
    const socket = await bind(config, closers);
    const baseUrl = config.atproto.publicUrl ?? socket.loopbackUrl;
    const hub = new ReplyHub();
    const mirror = new ReplyMirror(db.sql, hub, subsystemLog(logger, 'replies'));
    await mirror.start();
    // Replies in flight end as interrupted, with what arrived stored, before the server closes under them.
    closers.push(async () => {
      await hub.stopAll();
      await mirror.stop();
    });
    const oauth = await createOAuthClient(db.sql, {
      leases: db.leases,
      baseUrl,
      privateKeys: config.atproto.privateKeys,
      handleResolver: network.handleResolverUrl,
      plcUrl: network.plcUrl,
      allowHttp: network.local,
      fetch: options.oauthFetch ?? outbound.network,
    });
    const reader = new Network({
      handleResolver: network.handleResolverUrl,
      plcUrl: network.plcUrl,
      local: network.local,
      fetch: outbound.network,
    });
    const demoAdmin = localnet?.accounts[0]?.did;
    return {
      config,
      logger,
      options,
      sql: db.sql,
      instanceId: db.instanceId,
      leases: db.leases,
      localnet,
      network,
      outbound,
      ...keys,
      // Offline mode: the first demo account runs the Village, so a newcomer can add a key in the app.
      adminDids: [...config.adminDids, ...(demoAdmin ? [demoAdmin] : [])],
      server: socket.server,
      listenUrl: socket.listenUrl,
      baseUrl,
      hub,
      mirror,
      oauth,
      reader,
      state: { draining: false },
      close,
    };
  } catch (e) {
    // What was opened is closed as far as it can be; the reason it stopped is the error to report.
    for (let c = closers.pop(); c; c = closers.pop())
      await Promise.resolve()
        .then(c)
        .catch(() => {});
    throw e;
  }
}

/** Fails with a sentence, before anything starts, when a port this process must listen on is taken. */
async function checkPorts(config: Config): Promise<void> {
  await ensurePortFree(config.host, config.port, 'PORT');
  if (config.atproto.network === 'local') {
    await ensurePortFree('127.0.0.1', config.atproto.localnet.pdsPort, 'LOCALNET_PDS_PORT');
    await ensurePortFree('127.0.0.1', config.atproto.localnet.plcPort, 'LOCALNET_PLC_PORT');
  }
}

/** The database migrated, this instance registered, its leases, and replies a dead server left streaming ended. */
async function openDatabase(
  config: Config,
  options: StartOptions,
  log: (message: string, error?: unknown) => void,
  closers: Closer[],
) {
  let url = config.databaseUrl;
  if (!url) {
    const embedded = await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'));
    closers.push(() => embedded.stop());
    url = embedded.url;
    log(`Embedded PostgreSQL running (data in ${embedded.dataDir})`);
  }
  const sql = connect(url, {
    max: config.databasePoolSize + HELD_CONNECTIONS,
    onQuery: options.onQuery,
  });
  closers.push(() => sql.end({ timeout: 5 }));
  await migrate(sql);
  // Locks held while a Player's own servers are waited on are leases: rows with an expiry, holding no
  // connection while they wait or are held (ADR 0054).
  // Registered before the leases, so released after them: its release ends a backend (ADR 0102), and nothing but
  // the pool's end comes after it.
  const instance = await registerInstance(sql, { log });
  closers.push(() => instance.release());
  const leases = new Leases(sql);
  closers.push(() => leases.close());
  // A reply settled interrupted has ended: a live Conversation gives it its hold-back window (ADR 0046).
  const interrupted = await markInterrupted(sql);
  await turnEnded(sql, interrupted);
  if (interrupted.length) log(`Marked ${interrupted.length} reply(s) left mid-stream as interrupted.`);
  return { url, sql, leases, instanceId: instance.id };
}

/** The PDS and PLC of offline mode; imported only then, as they take seconds to load. */
async function startLocalnet(
  config: Config,
  databaseUrl: string,
  closers: Closer[],
  log: LogFn,
): Promise<LocalNetwork | undefined> {
  if (config.atproto.network !== 'local') return undefined;
  const { startLocalNetwork } = await import('./localnet/index.ts');
  const localnet = await startLocalNetwork({
    dataDir: config.dataDir,
    databaseUrl,
    ...config.atproto.localnet,
    log,
  });
  closers.push(() => localnet.close());
  return localnet;
}

/** The network's values, once: the local network's in offline mode, else the config's. */
export function resolveNetwork(config: Config, localnet?: LocalNetwork): AtNetwork {
  const { atproto } = config;
  return {
    kind: atproto.network,
    plcUrl: localnet?.plcUrl ?? atproto.plcUrl,
    handleResolverUrl: localnet?.pdsUrl ?? atproto.handleResolverUrl,
    pdsUrl: localnet?.pdsUrl,
    local: Boolean(localnet),
  };
}

/**
 * Every URL a user or the network supplies is fetched through one policy: MCP Servers and pages may reach private
 * addresses only when the instance says so; the ATProto network only offline, where it is on loopback.
 */
function outboundClients(config: Config, options: StartOptions, network: AtNetwork): AppContext['outbound'] {
  setLookupTtl(config.lookupCacheMs);
  const { resolve } = options;
  const networkOutbound = createOutbound({ allowPrivate: network.local, resolve });
  return {
    tools: createOutbound({ allowPrivate: config.allowPrivateToolUrls, resolve }),
    pages: createOutbound({ allowPrivate: config.allowPrivatePageUrls, resolve }),
    network: networkOutbound.fetch({ timeoutMs: 15_000, maxBytes: 4 * 1024 * 1024 }),
    networkSockets: networkOutbound.socket,
  };
}

/** The Providers and their keys; keys added in the app are sealed with SECRETS_KEY (offline: one in the data folder). */
async function loadProviderKeys(config: Config, sql: Sql) {
  const providers = new ProviderRegistry(config.providers, config.providerBaseUrls);
  const secretsKey =
    config.secretsKey ??
    (config.atproto.network === 'local' ? await localSecretsKey(config.dataDir) : undefined);
  const secrets = secretsKey ? new SecretBox(secretsKey) : undefined;
  await refreshProviderKeys(sql, secrets, providers);
  if (providers.demoOnly()) await seedVillageDefaults(sql, DEMO_PROVIDER, DEMO_MODEL);
  else await seedVillageDefaults(sql, config.defaultProvider, config.defaultModel);
  return { providers, secrets };
}

/** Not ready yet: what a request reaching the socket before the app is attached is answered. */
function notReady(_req: http.IncomingMessage, res: http.ServerResponse): void {
  res.writeHead(503, { 'retry-after': '1' }).end();
}

/** Listens first, so the port (and with it the OAuth client's URL) is known before the app is made. */
async function bind(config: Config, closers: Closer[]) {
  const server = http.createServer(notReady);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(portError(e, config.host, config.port, 'PORT')));
    server.listen(config.port, config.host, () => resolve());
  });
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  // A loopback OAuth client must redirect to 127.0.0.1, never "localhost".
  return { server, listenUrl: `http://${config.host}:${port}`, loopbackUrl: `http://127.0.0.1:${port}` };
}
