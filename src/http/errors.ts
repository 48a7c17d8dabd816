import type { ErrorRequestHandler, Response } from 'express';
import type { z } from 'zod';
import { type HttpErrorCode, type StatusChoice, statusOf } from '../wire/index.ts';

export interface AppErrorOptions<C extends HttpErrorCode> {
  /** What the client may act on besides the message (e.g. `{used, quota}`), sent as `details`. */
  details?: unknown;
  /** What went wrong underneath (kept for logs, never sent). */
  cause?: unknown;
  /** Seconds until trying again can succeed (sent as Retry-After). */
  retryAfter?: number;
  /** Only for a code the catalog gives two statuses (`BUSY`, …): which of them. */
  status?: StatusChoice<C>;
}

/**
 * A failure the client can act on: a stable code from the catalog (wire/errors.ts, which gives its HTTP status)
 * and a sentence a person understands.
 */
export class AppError<C extends HttpErrorCode = HttpErrorCode> extends Error {
  readonly code: HttpErrorCode;
  readonly status: number;
  readonly details: unknown;
  readonly retryAfter: number | undefined;

  constructor(code: C, message: string, options: AppErrorOptions<C> = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = statusOf(code, options.status);
    this.details = options.details;
    this.retryAfter = options.retryAfter;
  }
}

export const unauthenticated = () => new AppError('UNAUTHENTICATED', 'Sign in to continue.');
export const forbidden = (message = 'You are not allowed to do that.') => new AppError('FORBIDDEN', message);
export const notFound = (what: string) => new AppError('NOT_FOUND', `${what} not found.`);

export function invalidBody(error: z.ZodError): AppError {
  const first = error.issues[0];
  const where = first?.path.length ? ` (${first.path.join('.')})` : '';
  return new AppError(
    'INVALID_BODY',
    `The request body is not valid: ${first?.message ?? 'unreadable'}${where}.`,
    {
      details: { issues: error.issues.map((i) => ({ path: i.path, message: i.message })) },
    },
  );
}

/**
 * The one writer of an error body: `{error: {code, message, details}}`, or for XRPC the spec's `{error, message}`.
 * Retry-After is set when the error names it (a limiter that set its own is left alone).
 */
export function sendError(res: Response, err: AppError, shape: 'api' | 'xrpc' = 'api'): void {
  if (err.retryAfter !== undefined) res.set('Retry-After', String(Math.max(1, Math.ceil(err.retryAfter))));
  res
    .status(err.status)
    .json(
      shape === 'xrpc'
        ? { error: err.code, message: err.message }
        : { error: { code: err.code, message: err.message, details: err.details } },
    );
}

export interface ErrorHandlerOptions {
  /** Whether an error says a service the server needs (its database) cannot be reached just now. */
  unavailable?: (err: unknown) => boolean;
  /** Whether this server is shutting down: then such an error is its own closing, not an outage. */
  draining?: () => boolean;
}

/**
 * The one place errors become HTTP answers (`shape` 'xrpc' for the AppView's queries, in the spec's names). An
 * outage of the database is answered 503 with a time to try again, and logged as such; other unknown errors are
 * logged and answered without internals. One that comes after the answer began ends it, and is logged too.
 */
export function errorHandler(
  log: (message: string, error: unknown) => void,
  options: ErrorHandlerOptions = {},
  shape: 'api' | 'xrpc' = 'api',
): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const unavailable = options.unavailable?.(err) ?? false;
    const draining = unavailable && (options.draining?.() ?? false);
    if (unavailable && !draining) log('database unavailable', err);
    if (res.headersSent) {
      // A client that went away is not a bug, nor is an outage (logged above).
      if (!(err instanceof AppError) && !unavailable && !req.destroyed)
        log('unhandled error after the answer began', err);
      res.end();
      return;
    }
    if (err instanceof AppError) return sendError(res, err, shape);
    if (unavailable) {
      const code =
        shape === 'xrpc' ? 'NotEnoughResources' : draining ? 'SHUTTING_DOWN' : 'DATABASE_UNAVAILABLE';
      const message = draining
        ? 'This server is restarting. Try again in a moment.'
        : 'The server cannot reach its database just now. Nothing was lost; try again in a moment.';
      return sendError(res, new AppError(code, message, { retryAfter: draining ? 2 : 5 }), shape);
    }
    log('unhandled error', err);
    const message = 'Something went wrong on our side. Nothing was lost.';
    sendError(res, new AppError(shape === 'xrpc' ? 'InternalServerError' : 'INTERNAL', message), shape);
  };
}
