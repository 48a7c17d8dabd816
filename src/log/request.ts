import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';

const context = new AsyncLocalStorage<{ reqId: string }>();

/** The id of the request whose work is running now (also in background work it started), if any. */
export const currentRequestId = (): string | undefined => context.getStore()?.reqId;

/** Runs `fn` as part of the request `reqId` (a job handed from one request to another piece of work). */
export function withRequestId<T>(reqId: string, fn: () => T): T {
  return context.run({ reqId }, fn);
}

// A proxy's or client's id is kept when it is a plain token of sane length; anything else could forge lines.
const WELL_FORMED = /^[A-Za-z0-9._:-]{8,128}$/;
const QUIET = new Set(['/healthz', '/readyz', '/metrics']);

/** The path alone: a query can hold an OAuth code or a reader's search words. */
const pathOf = (url: string | undefined) => (url ?? '').split('?')[0]!.slice(0, 300);

/**
 * Gives each request its id (the incoming x-request-id when well formed, else a new UUID), sends it back as
 * x-request-id, runs the rest of the request in its context, and writes one line when the request ends.
 */
export function requestLogging(logger: Logger): RequestHandler {
  const http = pinoHttp({
    logger,
    wrapSerializers: false,
    serializers: {
      req: (req: IncomingMessage & { originalUrl?: string }) => ({
        method: req.method,
        url: pathOf(req.originalUrl ?? req.url),
      }),
      res: (res: ServerResponse) => ({ statusCode: res.statusCode }),
    },
    // Error is for what went wrong here (a 500, a thrown error). A 502 or 503 is an answer in words about someone
    // else's server or a full slot (a Player's page that never answers, an export past its deadline): a warning,
    // so an attacker's slow servers cannot fill the error log an operator watches.
    customLogLevel: (_req, res, err) =>
      err || res.statusCode === 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
    // The line is written when the response ends, outside the request's context: it names the request itself.
    customSuccessObject: (req, _res, value) => ({ ...value, reqId: req.id }),
    customErrorObject: (req, _res, _err, value) => ({ ...value, reqId: req.id }),
    autoLogging: { ignore: (req) => QUIET.has(pathOf(req.url)) },
  });
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const reqId = typeof incoming === 'string' && WELL_FORMED.test(incoming) ? incoming : randomUUID();
    (req as { id?: unknown }).id = reqId;
    res.setHeader('x-request-id', reqId);
    context.run({ reqId }, () => http(req, res, next));
  };
}
