import type { NodeOAuthClient } from '@atproto/oauth-client-node';
import express, { type Express, type RequestHandler } from 'express';
import {
  type CoverOf,
  type Network,
  readerRoutes,
  readerSource,
  readIndexerFigures,
} from './appview/index.ts';
import { attachmentRoutes } from './attachments/index.ts';
import { publicAuthRoutes, requireSession, sessionAuthRoutes } from './auth/index.ts';
import { cardRoutes, lorebookRoutes } from './cards/index.ts';
import type { AppContext } from './context.ts';
import { conversationRoutes, exchangeRoutes, isConversationOf } from './conversations/index.ts';
import { databaseUnavailable, type Leases, type Sql } from './db/index.ts';
import {
  type ErrorHandlerOptions,
  errorHandler,
  notFound,
  publicRateLimit,
  readJsonBody,
  requireIntent,
  securityHeaders,
  trustOnly,
  untrustedForwarding,
} from './http/index.ts';
import { type Logger, requestLogging, subsystemLog } from './log/index.ts';
import { countRefusals, metricsRoute } from './metrics/index.ts';
import { moderationRoutes, reportRoutes } from './moderation/index.ts';
import type { Outbound } from './outbound/index.ts';
import { liveTurnEnd, publicationStatusSql, publishRoutes, readerCover, turnEnded } from './publish/index.ts';
import { type ReplyHub, type ReplyMirror, replyRoutes } from './replies/index.ts';
import { grantTargets, toolRoutes } from './tools/index.ts';
import { turnRoutes } from './turn/index.ts';
import {
  type GrantTargets,
  type ProviderRegistry,
  providerKeyRoutes,
  type SecretBox,
  villageRoutes,
} from './village/index.ts';
import { type DemoAccountInfo, webRoutes } from './web/index.ts';

export interface AppDeps {
  sql: Sql;
  /** Locks held while a Player's own servers are waited on: publications (publish/store.ts). ADR 0054. */
  leases: Leases;
  providers: ProviderRegistry;
  /** Whether a first exchange's Model summarises the Conversation's title. */
  summariseTitles?: boolean;
  /** Opens and seals the Provider keys added in the app; absent: none can be stored. */
  secrets?: SecretBox;
  instanceId: number;
  adminDids: string[];
  checkpointMs: number;
  chunkTimeoutMs: number;
  /** Longest a turn waits for its claim's COMMIT before looking it up (TurnDeps). */
  commitWaitMs: number;
  /** The AI SDK's OpenTelemetry spans on Provider calls (OTEL_TELEMETRY). */
  telemetry?: boolean;
  /** How many characters of Parts, how many Parts, and how long, one reply may take. */
  replyLimits: { maxChars: number; maxMs: number; maxParts?: number };
  /** Longest one attachment upload may take. */
  uploadTimeoutMs: number;
  /** Replies in flight on this process, and their mirror to other instances (replies/). */
  hub: ReplyHub;
  mirror: ReplyMirror;
  /**
   * True once the instance is shutting down: /readyz then sends the load balancer elsewhere. The one getter: it
   * changes after the app is built (the context's `state`), and each request must see it as it is then.
   */
  draining: () => boolean;
  /** The OAuth client, made (in the context) once the server knows the URL it is reached at. */
  oauth: NodeOAuthClient;
  secureCookies: boolean;
  demoAccounts: DemoAccountInfo[];
  /** The URL browsers reach the server at (the socket is bound before the app is built). */
  baseUrl: string;
  network: 'local' | 'public';
  /** Where did:plc documents resolve (the local PLC in offline mode). */
  plcUrl: string;
  localNetwork: boolean;
  /** The outbound fetch for the ATProto network (DID documents, PDSes): see outbound/. */
  fetch: typeof globalThis.fetch;
  /** Reads published threads from the network for the reader. */
  reader: Network;
  /** The cover of a thread published from here: what the reader looks up beside it is covered as it is. */
  coverOf: CoverOf;
  /** The first wait before a publication left part-way is tried again in the background (ADR 0091). */
  retryMs: number;
  dataDir: string;
  /** Outbound requests to MCP Servers (ALLOW_PRIVATE_TOOL_URLS decides whether private addresses pass). */
  toolOutbound: Outbound;
  /** Pages attached by URL (ALLOW_PRIVATE_PAGE_URLS, not the tool setting, decides private addresses). */
  pageOutbound: Outbound;
  toolLimits: { timeoutMs: number; maxOutputBytes: number };
  /** Requests a minute one address may make to the public routes. */
  publicRequestsPerMinute: number;
  /** CIDRs of the reverse proxies whose X-Forwarded-For is believed (config TRUSTED_PROXIES). */
  trustedProxies: string[];
  log: (message: string, error?: unknown) => void;
  /** The process's logger: each room logs through its subsystem's child (log/). */
  logger: Logger;
  /** The bearer token /metrics asks for (unset: /metrics is not served). */
  metricsToken?: string;
  /** What tools/ gives village/ to check a grant's Skill or MCP Server is the Player's. */
  grantTargets: GrantTargets;
  /**
   * How an error no route named is told: as an outage of the database when it is one, and as the server's own
   * closing while it shuts down.
   */
  errors: ErrorHandlerOptions;
}

/**
 * What the rooms are given: the context's values, as they are (all are made before the app, ADR 0067), and
 * `draining`, read from the context's state on each request.
 */
export function appDeps(ctx: AppContext): AppDeps {
  const { config, network, localnet, oauth, baseUrl, state } = ctx;
  const draining = () => state.draining;
  return {
    sql: ctx.sql,
    leases: ctx.leases,
    providers: ctx.providers,
    instanceId: ctx.instanceId,
    adminDids: ctx.adminDids,
    secrets: ctx.secrets,
    checkpointMs: config.checkpointMs,
    summariseTitles: config.summariseTitles,
    chunkTimeoutMs: config.providerChunkTimeoutMs,
    commitWaitMs: config.commitWaitMs,
    telemetry: config.telemetry,
    replyLimits: config.replyLimits,
    uploadTimeoutMs: config.uploadTimeoutMs,
    hub: ctx.hub,
    mirror: ctx.mirror,
    draining,
    errors: { unavailable: databaseUnavailable, draining },
    oauth,
    secureCookies: Boolean(config.atproto.publicUrl),
    demoAccounts: localnet?.accounts ?? [],
    baseUrl,
    network: network.kind,
    plcUrl: network.plcUrl,
    localNetwork: network.local,
    dataDir: config.dataDir,
    toolOutbound: ctx.outbound.tools,
    pageOutbound: ctx.outbound.pages,
    publicRequestsPerMinute: config.publicRequestsPerMinute,
    trustedProxies: config.trustedProxies,
    toolLimits: config.toolLimits,
    reader: ctx.reader,
    coverOf: readerCover(ctx.sql),
    retryMs: config.liveRetryMs,
    fetch: ctx.outbound.network,
    log: subsystemLog(ctx.logger, 'http'),
    logger: ctx.logger,
    metricsToken: config.metricsToken,
    grantTargets,
  };
}

/** A Player's own data: never kept in a browser's or a proxy's cache (a shared computer's disk, a CDN). */
const noStore: RequestHandler = (_req, res, next) => {
  res.set('Cache-Control', 'no-store');
  next();
};

/** Each request's line, and once a word to an operator whose reverse proxy TRUSTED_PROXIES leaves out. */
function httpLogging(deps: { logger: Logger; trustedProxies: string[] }): RequestHandler[] {
  const http = deps.logger.child({ subsystem: 'http' });
  return [
    requestLogging(http),
    untrustedForwarding(deps.trustedProxies, (peer) =>
      http.warn(
        { peer },
        `A request came through ${peer} with an X-Forwarded-For header, and TRUSTED_PROXIES does not name ${peer}. If it is this server's reverse proxy, set TRUSTED_PROXIES to its address: until then every client behind it counts as one address for the per-address limits. If it is not, a client sent the header itself, and it was ignored. Said once.`,
      ),
    ),
  ];
}

/** Assembles the Express app from every room's routes, given the context; nothing else. */
export function createApp(ctx: AppContext): Express {
  const deps = appDeps(ctx);
  const app = express();
  app.disable('x-powered-by');
  // The client is the socket's address unless that is one of the configured proxies (then the address that proxy
  // was reached from, and so on): a header a client sets is never believed by itself (issue 25).
  app.set('trust proxy', trustOnly(deps.trustedProxies));
  app.use(httpLogging(deps));
  app.use(
    countRefusals,
    metricsRoute({ sql: deps.sql, token: deps.metricsToken, figures: [readIndexerFigures] }),
  );
  app.use(securityHeaders);
  // What anyone may ask for without signing in is rationed per client address — in this instance's memory: a
  // statement on every public read cost a thread read 1–2 ms (the bench's warm read past its target), so several
  // instances behind a balancer allow the limit once each. The per-Player limits count in PostgreSQL.
  const rationed = publicRateLimit(deps.publicRequestsPerMinute);
  app.use(
    ['/xrpc', '/api/reader', '/profile', '/feeds', '/sitemap.xml', '/oauth', '/api/auth/login'],
    rationed,
  );
  // The hot path before every page, file and public route (a turn's POST walked all their layers), after the ration
  // (its body parser reads nothing a rationed client sends). Its session: turn/admit.ts; its JSON: requireIntent's.
  app.use(
    '/api',
    noStore,
    readJsonBody,
    turnRoutes({
      ...deps,
      turnEnded: liveTurnEnd(deps.sql, deps.log),
      log: subsystemLog(deps.logger, 'turn'),
    }),
  );

  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  // For a load balancer: ready while the database answers and the instance is not shutting down.
  app.get('/readyz', async (_req, res) => {
    const db = await deps.sql`select 1`.then(
      () => true,
      () => false,
    );
    const ready = db && !deps.draining();
    res.status(ready ? 200 : 503).json({ ready, database: db, draining: deps.draining() });
  });
  app.use(webRoutes({ ...deps, reader: readerSource(deps) }));
  app.use(readJsonBody, publicAuthRoutes({ ...deps, log: subsystemLog(deps.logger, 'auth') }));
  app.use(readerRoutes({ ...deps, log: subsystemLog(deps.logger, 'appview') }));
  app.use(reportRoutes(deps));

  const api = express.Router();
  api.use(noStore);
  // Turns came onto the path (a reply settled interrupted, a branch shown): their live hold-back (ADR 0043, 0046).
  const onPath = (ids: string | string[]) =>
    turnEnded(deps.sql, ids).catch((e) => deps.log('could not schedule a live append', e));
  api.use(requireSession(deps.sql));
  api.use(requireIntent);
  api.use(sessionAuthRoutes({ ...deps, log: subsystemLog(deps.logger, 'auth') }));
  api.use(cardRoutes(deps));
  api.use(lorebookRoutes(deps));
  api.use(villageRoutes(deps));
  api.use(providerKeyRoutes(deps));
  api.use(exchangeRoutes(deps));
  // The list shows each Conversation's publication: publish/ builds that part of its statement (publish imports
  // conversations, so conversations is handed it here).
  api.use(conversationRoutes({ ...deps, pathMoved: onPath, publicationStatus: publicationStatusSql }));
  api.use(attachmentRoutes({ ...deps, isConversationOf, log: subsystemLog(deps.logger, 'attachments') }));
  api.use(replyRoutes({ ...deps, afterInterrupted: onPath, log: subsystemLog(deps.logger, 'replies') }));
  api.use(publishRoutes({ ...deps, log: subsystemLog(deps.logger, 'publish') }));
  api.use(toolRoutes(deps));
  api.use(moderationRoutes(deps));
  api.use(() => {
    throw notFound('Route');
  });
  app.use('/api', api);

  app.use(errorHandler(deps.log, deps.errors));
  return app;
}
