import { type ErrorRequestHandler, Router } from 'express';
import type { Sql } from '../db/index.ts';
import { AppError, notFound } from '../http/index.ts';
import { lexicons } from '../lexicon/generated/lexicons.ts';
import type { Network } from './network.ts';
import { getThreadJson, listSessions, resolveActor } from './read.ts';
import { readThread } from './thread.ts';

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
    throw new AppError(400, 'InvalidRequest', (e as Error).message);
  }
}

/**
 * Public reading: our AppView's XRPC queries (for any client) and the reader UI's API. No session needed.
 */
export function readerRoutes(deps: { sql: Sql; reader: Network }): Router {
  const { sql, reader } = deps;
  const router = Router();

  router.get(`/xrpc/${GET_THREAD}`, async (req, res) => {
    const params = xrpcParams(GET_THREAD, req.query as Record<string, unknown>);
    // Every record in the index passed the lexicon when it was indexed; the answer is assembled as text.
    const thread = await getThreadJson(sql, reader, params.uri as string);
    if (!thread) {
      res.status(400).json({ error: 'NotFound', message: 'No such session.' });
      return;
    }
    res.type('json').send(thread);
  });

  router.get(`/xrpc/${LIST_SESSIONS}`, async (req, res) => {
    const params = xrpcParams(LIST_SESSIONS, req.query as Record<string, unknown>);
    const did = params.actor ? await resolveActor(sql, reader, params.actor as string) : undefined;
    if (params.actor && !did) {
      res.json({ sessions: [] });
      return;
    }
    const page = await listSessions(sql, reader, {
      did: did ?? undefined,
      limit: (params.limit as number) ?? 30,
      cursor: params.cursor as string | undefined,
    });
    res.json(lexicons.assertValidXrpcOutput(LIST_SESSIONS, page));
  });

  // XRPC answers errors in the spec's shape, {error, message}, whatever went wrong.
  router.use('/xrpc', ((err, _req, res, next) => {
    if (res.headersSent) return next(err);
    if (err instanceof AppError) {
      res.status(err.status).json({ error: err.code, message: err.message });
      return;
    }
    res.status(500).json({ error: 'InternalServerError', message: 'Something went wrong on our side.' });
    next(err);
  }) as ErrorRequestHandler);

  router.get('/api/reader/threads/:actor/:rkey', async (req, res) => {
    const { actor, rkey } = req.params;
    if (!/^[a-zA-Z0-9._:%~-]{1,300}$/.test(actor) || !/^[a-z2-7]{13}$/.test(rkey)) throw notFound('Thread');
    const thread = await readThread(sql, reader, actor, rkey);
    if (!thread) throw notFound('Thread');
    res.set('Cache-Control', 'public, max-age=15').json({ thread });
  });

  return router;
}
