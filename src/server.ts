import http from 'node:http';
import path from 'node:path';
import type { NodeOAuthClient } from '@atproto/oauth-client-node';
import { createApp } from './app.ts';
import { type Indexer, Network, setLookupTtl, startIndexer } from './appview/index.ts';
import { sweepAbandoned, sweepOrphans, sweepStaging } from './attachments/index.ts';
import { createOAuthClient } from './auth/index.ts';
import type { Config } from './config.ts';
import { markInterrupted } from './conversations/index.ts';
import {
  connect,
  type EmbeddedDatabase,
  Leases,
  migrate,
  registerInstance,
  type Sql,
  startEmbeddedPostgres,
} from './db/index.ts';
import { followLabelers } from './labels/index.ts';
import type { LocalNetwork } from './localnet/index.ts';
import { createLogger, type Logger, subsystemLog } from './log/index.ts';
import { createOutbound, type Resolve } from './outbound/index.ts';
import { ensurePortFree, portError } from './portCheck.ts';
import {
  resume,
  startLiveAppends,
  turnEnded,
  unfinishedPublications,
  withPublicationLock,
} from './publish/index.ts';
import { ReplyHub, ReplyMirror } from './replies/index.ts';
import { stopSandboxes, sweepSandboxCopies } from './tools/index.ts';
import {
  DEMO_MODEL,
  DEMO_PROVIDER,
  localSecretsKey,
  ProviderRegistry,
  refreshProviderKeys,
  SecretBox,
  seedVillageDefaults,
} from './village/index.ts';

export interface Running {
  /** Where browsers reach the server (the public URL when one is configured). */
  url: string;
  /** Where this process listens. */
  listenUrl: string;
  sql: Sql;
  server: http.Server;
  instanceId: number;
  oauth: NodeOAuthClient;
  /** This process's leases (ADR 0054). */
  leases: Leases;
  localnet?: LocalNetwork;
  indexer?: Indexer;
  /** The labelers' follower (resolves `leading` once this process follows them). */
  labels: { leading: Promise<void> };
  close(): Promise<void>;
}

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

/**
 * Start: config -> database (embedded when DATABASE_URL is unset) -> migrations -> the local ATProto network
 * in offline mode -> app -> listen -> the OAuth client for the URL the server is reached at.
 */
export async function start(
  config: Config,
  logger: Logger = createLogger(config.log),
  options: StartOptions = {},
): Promise<Running> {
  const log = subsystemLog(logger, 'server');
  await ensurePortFree(config.host, config.port, 'PORT');
  if (config.atproto.network === 'local') {
    await ensurePortFree('127.0.0.1', config.atproto.localnet.pdsPort, 'LOCALNET_PDS_PORT');
    await ensurePortFree('127.0.0.1', config.atproto.localnet.plcPort, 'LOCALNET_PLC_PORT');
  }
  let embedded: EmbeddedDatabase | undefined;
  let url = config.databaseUrl;
  if (!url) {
    embedded = await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'));
    url = embedded.url;
    log(`Embedded PostgreSQL running (data in ${embedded.dataDir})`);
  }
  const sql = connect(url, { onQuery: options.onQuery });
  await migrate(sql);
  const instance = await registerInstance(sql);
  // A reply settled interrupted has ended: a live Conversation gives it its hold-back window (ADR 0046).
  const interrupted = await markInterrupted(sql);
  await turnEnded(sql, interrupted);
  if (interrupted.length) log(`Marked ${interrupted.length} reply(s) left mid-stream as interrupted.`);
  // And while this server runs: a server that dies while others keep running leaves replies streaming.
  let draining = false;
  const hub = new ReplyHub();
  const mirror = new ReplyMirror(sql, hub, subsystemLog(logger, 'replies'));
  await mirror.start();
  const sweep = setInterval(() => {
    markInterrupted(sql)
      .then((ended) => turnEnded(sql, ended))
      .catch((e) => log('could not mark interrupted replies', e));
    mirror.sweep().catch((e) => log('could not sweep reply frames', e));
    // Attachments: crashed uploads, uploads never sent, and bytes nothing uses any more.
    Promise.all([sweepStaging(sql), sweepAbandoned(sql), sweepOrphans(sql)]).catch((e) =>
      log('could not sweep attachments', e),
    );
    sweepSandboxCopies(sql, config.dataDir).catch((e) => log('could not sweep sandbox copies', e));
    // Keys another instance's admin page changed.
    refreshProviderKeys(sql, secrets, providers).catch((e) => log('could not read Provider keys', e));
  }, 30_000);
  sweep.unref();

  const providers = new ProviderRegistry(config.providers, config.providerBaseUrls);
  // Provider keys added in the app are encrypted with SECRETS_KEY; offline mode makes one in the data folder.
  const secretsKey =
    config.secretsKey ??
    (config.atproto.network === 'local' ? await localSecretsKey(config.dataDir) : undefined);
  const secrets = secretsKey ? new SecretBox(secretsKey) : undefined;
  await refreshProviderKeys(sql, secrets, providers);
  if (providers.demoOnly()) await seedVillageDefaults(sql, DEMO_PROVIDER, DEMO_MODEL);
  else await seedVillageDefaults(sql, config.defaultProvider, config.defaultModel);

  const { atproto } = config;
  // Imported only in offline mode: the PDS and PLC take seconds to load.
  const localnet =
    atproto.network === 'local'
      ? await (await import('./localnet/index.ts')).startLocalNetwork({
          dataDir: config.dataDir,
          databaseUrl: url,
          ...atproto.localnet,
        })
      : undefined;

  // Every URL a user or the network supplies is fetched through one policy: MCP Servers may reach private
  // addresses only when the instance says so; the ATProto network only offline, where it is on loopback.
  setLookupTtl(config.lookupCacheMs);
  const toolOutbound = createOutbound({
    allowPrivate: config.allowPrivateToolUrls,
    resolve: options.resolve,
  });
  const networkOutbound = createOutbound({ allowPrivate: Boolean(localnet), resolve: options.resolve });
  const networkFetch = networkOutbound.fetch({ timeoutMs: 15_000, maxBytes: 4 * 1024 * 1024 });

  let oauth: NodeOAuthClient | undefined;
  let baseUrl = atproto.publicUrl ?? '';
  // Locks held while a Player's own servers are waited on (publications, OAuth refreshes) are leases: rows
  // with an expiry, holding no connection while they wait or are held (ADR 0054).
  const leases = new Leases(sql);
  const app = createApp({
    sql,
    leases,
    providers,
    instanceId: instance.id,
    // Offline mode: the first demo account runs the Village, so a newcomer can add a key in the app.
    adminDids: [...config.adminDids, ...(localnet?.accounts[0] ? [localnet.accounts[0].did] : [])],
    secrets,
    checkpointMs: config.checkpointMs,
    summariseTitles: config.summariseTitles,
    chunkTimeoutMs: config.providerChunkTimeoutMs,
    telemetry: config.telemetry,
    replyLimits: config.replyLimits,
    uploadTimeoutMs: config.uploadTimeoutMs,
    hub,
    mirror,
    draining: () => draining,
    oauth: () => oauth!,
    secureCookies: Boolean(atproto.publicUrl),
    demoAccounts: () => localnet?.accounts ?? [],
    baseUrl: () => baseUrl,
    network: atproto.network,
    plcUrl: () => localnet?.plcUrl ?? atproto.plcUrl,
    localNetwork: Boolean(localnet),
    dataDir: config.dataDir,
    toolOutbound,
    pageOutbound: createOutbound({ allowPrivate: config.allowPrivatePageUrls, resolve: options.resolve }),
    publicRequestsPerMinute: config.publicRequestsPerMinute,
    trustedProxies: config.trustedProxies,
    toolLimits: config.toolLimits,
    reader: new Network({
      handleResolver: () => localnet?.pdsUrl ?? atproto.handleResolverUrl,
      plcUrl: () => localnet?.plcUrl ?? atproto.plcUrl,
      local: Boolean(localnet),
      fetch: networkFetch,
    }),
    fetch: networkFetch,
    log: subsystemLog(logger, 'http'),
    logger,
    metricsToken: config.metricsToken,
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(portError(e, config.host, config.port, 'PORT')));
    server.listen(config.port, config.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  // A loopback OAuth client must redirect to 127.0.0.1, never "localhost".
  baseUrl = atproto.publicUrl ?? `http://127.0.0.1:${port}`;
  oauth = await createOAuthClient(sql, {
    leases,
    baseUrl,
    privateKeys: atproto.privateKeys,
    handleResolver: localnet?.pdsUrl ?? atproto.handleResolverUrl,
    plcUrl: localnet?.plcUrl ?? atproto.plcUrl,
    allowHttp: Boolean(localnet),
    fetch: options.oauthFetch ?? networkFetch,
  });

  // The AppView follows the network's events: a configured relay, or the local PDS in offline mode.
  // Or, where configured, a Jetstream instance (ADR 0039).
  const relay = config.indexerRelayUrl ?? localnet?.pdsUrl.replace(/^http/, 'ws');
  const source = config.indexerJetstreamUrl
    ? ({ kind: 'jetstream', url: config.indexerJetstreamUrl } as const)
    : relay
      ? ({ kind: 'relay', url: relay } as const)
      : undefined;
  const indexer = source
    ? startIndexer({
        sql,
        source,
        plcUrl: localnet?.plcUrl ?? atproto.plcUrl,
        local: Boolean(localnet),
        fetch: networkFetch,
        log: subsystemLog(logger, 'appview'),
      })
    : undefined;

  // The configured labelers' labels, followed into the database; the reader's statements honour them (ADR 0060).
  const labels = followLabelers({
    sql,
    labelers: config.labelers,
    plcUrl: localnet?.plcUrl ?? atproto.plcUrl,
    local: Boolean(localnet),
    fetch: networkFetch,
    policy: networkOutbound.socket,
    log: subsystemLog(logger, 'labels'),
    ...options.labels,
  });

  // Publications a crash or a rate limit left part-way resume in the background.
  const publishDeps = {
    sql,
    leases,
    oauth: () => oauth!,
    plcUrl: () => localnet?.plcUrl ?? atproto.plcUrl,
    localNetwork: Boolean(localnet),
    fetch: networkFetch,
    log: subsystemLog(logger, 'publish'),
  };
  // Live publishing: appends that are due go out from whichever server takes them first (ADR 0043).
  const stopLiveAppends = startLiveAppends(publishDeps);
  for (const p of await unfinishedPublications(sql)) {
    withPublicationLock(leases, p.conversationId, () => resume(publishDeps, p.did, p.conversationId)).catch(
      (e) => log(`publication ${p.conversationId} still unfinished`, e),
    );
  }

  return {
    url: baseUrl,
    listenUrl: `http://${config.host}:${port}`,
    sql,
    server,
    instanceId: instance.id,
    oauth,
    leases,
    localnet,
    indexer,
    labels,
    async close() {
      draining = true;
      clearInterval(sweep);
      stopLiveAppends();
      // Replies in flight end as interrupted, with what arrived stored, before anything closes under them.
      await hub.stopAll();
      await mirror.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await indexer?.stop();
      await labels.stop();
      stopSandboxes();
      await localnet?.close();
      await instance.release();
      await leases.close();
      await sql.end({ timeout: 5 });
      await embedded?.stop();
    },
  };
}
