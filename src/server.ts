import type http from 'node:http';
import type { NodeOAuthClient } from '@atproto/oauth-client-node';
import { createApp } from './app.ts';
import { type Indexer, startIndexer } from './appview/index.ts';
import { sweepAbandoned, sweepOrphans, sweepStaging } from './attachments/index.ts';
import type { Config } from './config.ts';
import { type AppContext, fromConfig, type StartOptions } from './context.ts';
import { existingConversations, markInterrupted } from './conversations/index.ts';
import type { Leases, Sql } from './db/index.ts';
import { followLabelers } from './labels/index.ts';
import type { LocalNetwork } from './localnet/index.ts';
import { createLogger, type Logger, subsystemLog } from './log/index.ts';
import {
  type PublishDeps,
  resume,
  startLiveAppends,
  startPublishRetries,
  turnEnded,
  unfinishedPublications,
  withPublicationLock,
} from './publish/index.ts';
import { sweepSandboxCopies } from './tools/index.ts';
import { refreshProviderKeys } from './village/index.ts';

export type { AppContext, StartOptions } from './context.ts';
export { fromConfig } from './context.ts';

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
  /** What the server was built from. */
  ctx: AppContext;
  /** Stops the background jobs, then the context, each last started first. */
  close(): Promise<void>;
}

/** The context from the config, then served: what main.ts, the tests' app and the benchmarks start. */
export async function start(
  config: Config,
  logger: Logger = createLogger(config.log),
  options: StartOptions = {},
): Promise<Running> {
  return serve(await fromConfig(config, logger, options));
}

/**
 * Serves a context: the app attached to its socket, then the background jobs (sweeps, the AppView's indexer, the
 * labelers' follower, live appends, publications left part-way). `close` stops them last started first, then
 * closes the context.
 */
export async function serve(ctx: AppContext): Promise<Running> {
  ctx.server.removeAllListeners('request');
  ctx.server.on('request', createApp(ctx));
  const stops: (() => unknown)[] = [];
  const close = async () => {
    // /readyz sends the load balancer elsewhere from now on.
    ctx.state.draining = true;
    // Replies in flight end first, as interrupted with what arrived stored, as they did before the jobs' stops
    // (which may wait on a batch) came first; the context's close ends any that started since.
    await ctx.hub.stopAll();
    for (let stop = stops.pop(); stop; stop = stops.pop()) await stop();
    await ctx.close();
  };
  stops.push(startSweeps(ctx));
  const indexer = startAppView(ctx);
  if (indexer) stops.push(() => indexer.stop());
  // The configured labelers' labels, followed into the database; the reader's statements honour them (ADR 0060).
  const labels = followLabelers({
    sql: ctx.sql,
    labelers: ctx.config.labelers,
    plcUrl: ctx.network.plcUrl,
    local: ctx.network.local,
    fetch: ctx.outbound.network,
    policy: ctx.outbound.networkSockets,
    log: subsystemLog(ctx.logger, 'labels'),
    ...ctx.options.labels,
  });
  stops.push(() => labels.stop());
  try {
    stops.push(await startPublishing(ctx));
  } catch (e) {
    await close().catch(() => {});
    throw e;
  }
  return {
    url: ctx.baseUrl,
    listenUrl: ctx.listenUrl,
    sql: ctx.sql,
    server: ctx.server,
    instanceId: ctx.instanceId,
    oauth: ctx.oauth,
    leases: ctx.leases,
    localnet: ctx.localnet,
    indexer,
    labels,
    ctx,
    close,
  };
}

/** Every 30 s: what a dead server, a crashed upload or another instance's admin page left behind. */
function startSweeps(ctx: AppContext): () => void {
  const { sql, config } = ctx;
  const log = subsystemLog(ctx.logger, 'server');
  const sweep = setInterval(() => {
    // A server that dies while others keep running leaves replies streaming.
    markInterrupted(sql)
      .then((ended) => turnEnded(sql, ended))
      .catch((e) => log('could not mark interrupted replies', e));
    ctx.mirror.sweep().catch((e) => log('could not sweep reply frames', e));
    // Attachments: crashed uploads, uploads never sent, and bytes nothing uses any more.
    Promise.all([sweepStaging(sql), sweepAbandoned(sql), sweepOrphans(sql)]).catch((e) =>
      log('could not sweep attachments', e),
    );
    sweepSandboxCopies(sql, config.dataDir, existingConversations).catch((e) =>
      log('could not sweep sandbox copies', e),
    );
    // Keys another instance's admin page changed.
    refreshProviderKeys(sql, ctx.secrets, ctx.providers).catch((e) => log('could not read Provider keys', e));
  }, 30_000);
  sweep.unref();
  return () => clearInterval(sweep);
}

/**
 * The AppView follows the network's events: a configured relay, or the local PDS in offline mode. Or, where
 * configured, a Jetstream instance (ADR 0039).
 */
function startAppView(ctx: AppContext): Indexer | undefined {
  const { config } = ctx;
  const relay = config.indexerRelayUrl ?? ctx.network.pdsUrl?.replace(/^http/, 'ws');
  const source = config.indexerJetstreamUrl
    ? ({ kind: 'jetstream', url: config.indexerJetstreamUrl } as const)
    : relay
      ? ({ kind: 'relay', url: relay } as const)
      : undefined;
  if (!source) return undefined;
  return startIndexer({
    sql: ctx.sql,
    source,
    plcUrl: ctx.network.plcUrl,
    local: ctx.network.local,
    fetch: ctx.outbound.network,
    log: subsystemLog(ctx.logger, 'appview'),
  });
}

/** What publishing is given: the context's values. */
function publishDeps(ctx: AppContext): PublishDeps {
  return {
    sql: ctx.sql,
    leases: ctx.leases,
    oauth: ctx.oauth,
    plcUrl: ctx.network.plcUrl,
    localNetwork: ctx.network.local,
    fetch: ctx.outbound.network,
    log: subsystemLog(ctx.logger, 'publish'),
    retryMs: ctx.config.liveRetryMs,
  };
}

/**
 * Live publishing: appends that are due go out from whichever server takes them first (ADR 0043). Publications a
 * crash or a rate limit left part-way resume in the background.
 */
async function startPublishing(ctx: AppContext): Promise<() => void> {
  const deps = publishDeps(ctx);
  const log = subsystemLog(ctx.logger, 'server');
  const unfinished = await unfinishedPublications(ctx.sql);
  const stopLiveAppends = startLiveAppends(deps, { retryMs: ctx.config.liveRetryMs });
  const stopRetries = startPublishRetries(deps, Math.min(5000, ctx.config.liveRetryMs));
  for (const p of unfinished) {
    withPublicationLock(ctx.leases, p.conversationId, () => resume(deps, p.did, p.conversationId)).catch(
      (e) => log(`publication ${p.conversationId} still unfinished`, e),
    );
  }
  return () => {
    stopLiveAppends();
    stopRetries();
  };
}
