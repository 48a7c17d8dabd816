import { Router } from 'express';
import type { z } from 'zod';
import type { Sql } from '../db/index.ts';
import {
  AppError,
  type ErrorHandlerOptions,
  errorHandler,
  notFound,
  requesterKey,
  respond,
} from '../http/index.ts';
import { lexicons } from '../lexicon/index.ts';
import { ListSessionsResponse, ThreadPageQuery, ThreadResponse } from '../wire/index.ts';
import { AvatarCache } from './avatars.ts';
import { atomFeed, sitemap } from './feeds.ts';
import type { Network } from './network.ts';
import { getThreadBody, indexedAvatar, listSessions, recentThreads, resolveActor } from './read.ts';
import { type CoverOf, readThread } from './thread.ts';

const GET_THREAD = 'click.aligned.chat.getThread';
const LIST_SESSIONS = 'click.aligned.chat.listSessions';

/** Query-string values are strings: integers and booleans the lexicon declares are read as such first. */
function xrpcParams(nsid: string, query: Record<string, unknown>): Record<string, unknown> {
  const def = lexicons.getDefOrThrow(nsid) as {
    parameters?: { properties?: Record<string, { type: string }> };
  };
  const typed: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query)) {
    const type = def.parameters?.properties?.[k]?.type;
    typed[k] =
      type === 'integer' && typeof v === 'string' && /^-?\d+$/.test(v)
        ? Number(v)
        : type === 'boolean' && typeof v === 'string'
          ? v === 'true'
          : v;
  }
  try {
    return lexicons.assertValidXrpcParams(nsid, typed) ?? {};
  } catch (e) {
    throw new AppError('InvalidRequest', (e as Error).message);
  }
}

/**
 * Public reading: our AppView's XRPC queries (for any client) and the reader UI's API. No session needed.
 */
export function readerRoutes(deps: {
  sql: Sql;
  reader: Network;
  baseUrl: string;
  /** The cover of a thread published from here (see readThread). */
  coverOf?: CoverOf;
  log: (message: string, error?: unknown) => void;
  /** How an error no route named is told (a database outage, a server shutting down). */
  errors?: ErrorHandlerOptions;
}): Router {
  const { sql, reader } = deps;
  const router = Router();
  // Feeds and the sitemap are read by machines that come back often: a CDN may keep them a few minutes.
  const FEED_CACHE = 'public, max-age=300';

  router.get('/feeds/recent.atom', async (req, res) => {
    const base = deps.baseUrl;
    const { sessions } = await listSessions(sql, reader, { limit: 50, requester: requesterKey(req) });
    const self = `${base}/feeds/recent.atom`;
    res
      .set('Cache-Control', FEED_CACHE)
      .type('application/atom+xml')
      .send(atomFeed({ title: 'AgentsVille: recently published conversations', self, base, sessions }));
  });

  router.get('/profile/:actor/feed.atom', async (req, res) => {
    const { actor } = req.params;
    if (!/^[a-zA-Z0-9._:%~-]{1,300}$/.test(actor)) throw notFound('Author');
    const did = await resolveActor(sql, reader, actor);
    if (!did) throw notFound('Author');
    const base = deps.baseUrl;
    const { sessions } = await listSessions(sql, reader, { did, limit: 50, requester: requesterKey(req) });
    const name = sessions[0]?.author.handle ?? actor;
    const self = `${base}/profile/${encodeURIComponent(actor)}/feed.atom`;
    res
      .set('Cache-Control', FEED_CACHE)
      .type('application/atom+xml')
      .send(atomFeed({ title: `Conversations published by ${name} on AgentsVille`, self, base, sessions }));
  });

  router.get('/sitemap.xml', async (_req, res) => {
    res
      .set('Cache-Control', FEED_CACHE)
      .type('application/xml')
      .send(sitemap(deps.baseUrl, await recentThreads(sql, 5000)));
  });

  router.get(`/xrpc/${GET_THREAD}`, async (req, res) => {
    const params = xrpcParams(GET_THREAD, req.query as Record<string, unknown>);
    // Every record in the index passed the lexicon when it was indexed; the answer is assembled as text.
    const thread = await getThreadBody(sql, reader, params.uri as string, { requester: requesterKey(req) });
    if (!thread) throw new AppError('NotFound', 'No such session.');
    res.set('ETag', thread.etag).type('application/json; charset=utf-8').send(thread.body);
  });

  router.get(`/xrpc/${LIST_SESSIONS}`, async (req, res) => {
    const page = await sessionsPage(sql, reader, req.query as Record<string, unknown>, requesterKey(req));
    respond(res, ListSessionsResponse, page);
  });

  // XRPC answers errors in the spec's shape, {error, message}, whatever went wrong.
  router.use('/xrpc', errorHandler(deps.log, deps.errors, 'xrpc'));

  // An agent's avatar (ADR 0065): only a blob an indexed, served session of this author references, fetched from the
  // author's PDS through the bounded, checked fetch, and served as an inert image (no sniffing, no script).
  const avatars = new AvatarCache();
  router.get('/api/reader/avatars/:did/:cid', async (req, res) => {
    const { did, cid } = req.params;
    if (!/^did:[a-z]+:[a-zA-Z0-9._:%-]{1,256}$/.test(did) || !/^b[a-z2-7]{20,100}$/.test(cid))
      throw notFound('Avatar');
    const avatar = await indexedAvatar(sql, did, cid);
    if (!avatar) throw notFound('Avatar');
    const bytes = await avatars.get(
      did,
      avatar,
      () => reader.avatar(did, avatar, AbortSignal.timeout(10_000)),
      requesterKey(req),
    );
    if (!bytes) throw notFound('Avatar');
    res
      .set({
        // A CID's bytes never change, but a takedown must reach browsers and caches within a day, not a year.
        'Cache-Control': 'public, max-age=86400',
        'Content-Security-Policy': "default-src 'none'",
        'X-Content-Type-Options': 'nosniff',
        'Content-Type': avatar.mimeType,
      })
      .send(Buffer.from(bytes));
  });

  router.get('/api/reader/threads/:actor/:rkey', async (req, res) => {
    const { actor, rkey } = req.params;
    if (!/^[a-zA-Z0-9._:%~-]{1,300}$/.test(actor) || !/^[a-z2-7]{13}$/.test(rkey)) throw notFound('Thread');
    const query = ThreadPageQuery.safeParse(req.query);
    if (!query.success) throw notFound('Page');
    // One page of the thread, the first unless another is named: never the whole thread (up to 16 MiB, encoded
    // on the event loop for each request), which the app's thread page once asked for every 5 s.
    const read = await readThread(sql, reader, actor, rkey, query.data.page ?? 1, {
      coverOf: deps.coverOf,
      requester: requesterKey(req),
    });
    // What is missing, for a reader whose open page finds it so (client/src/reader/Unpublished.tsx).
    if (!read) throw new AppError('NOT_FOUND', 'Thread not found.', { details: { missing: 'thread' } });
    if (read === 'no-page')
      throw new AppError('NOT_FOUND', 'Page not found.', { details: { missing: 'page' } });
    res.set('Cache-Control', 'public, max-age=15');
    const answer = { thread: read.thread, window: read.window };
    // The index holds only records that passed the lexicon; encoding checks the fields the pages read again.
    respond(res, ThreadResponse, answer as z.output<typeof ThreadResponse>);
  });

  return router;
}

/** click.aligned.chat.listSessions: the most recent sessions, everyone's or one author's (none if unknown). */
async function sessionsPage(
  sql: Sql,
  reader: Network,
  query: Record<string, unknown>,
  requester: string,
): Promise<z.output<typeof ListSessionsResponse>> {
  const params = xrpcParams(LIST_SESSIONS, query);
  const did = params.actor ? await resolveActor(sql, reader, params.actor as string) : undefined;
  if (params.actor && !did) return { sessions: [] };
  const page = await listSessions(sql, reader, {
    did: did ?? undefined,
    limit: (params.limit as number) ?? 30,
    cursor: params.cursor as string | undefined,
    requester,
  });
  // The lexicon validates the answer (XRPC's own contract); the wire schema, what the web app decodes, encodes it.
  lexicons.assertValidXrpcOutput(LIST_SESSIONS, page);
  return page as z.output<typeof ListSessionsResponse>;
}
