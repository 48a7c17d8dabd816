import type { ErrorRequestHandler } from 'express';
import type { z } from 'zod';

/** A failure the client can act on: an HTTP status, a stable code, and a sentence a person understands. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** Seconds until trying again can succeed (a 429 sends it as Retry-After). */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

export const unauthenticated = () => new AppError(401, 'UNAUTHENTICATED', 'Sign in to continue.');
export const forbidden = (message = 'You are not allowed to do that.') =>
  new AppError(403, 'FORBIDDEN', message);
export const notFound = (what: string) => new AppError(404, 'NOT_FOUND', `${what} not found.`);

export function invalidBody(error: z.ZodError): AppError {
  const first = error.issues[0];
  const where = first?.path.length ? ` (${first.path.join('.')})` : '';
  return new AppError(
    400,
    'INVALID_BODY',
    `The request body is not valid: ${first?.message ?? 'unreadable'}${where}.`,
    {
      issues: error.issues.map((i) => ({ path: i.path, message: i.message })),
    },
  );
}

/** The one place errors become HTTP answers. Unknown errors are logged and answered without internals. */
export function errorHandler(log: (message: string, error: unknown) => void): ErrorRequestHandler {
  return (err, _req, res, _next) => {
    if (res.headersSent) {
      res.end();
      return;
    }
    if (err instanceof AppError) {
      if (err.retryAfter !== undefined)
        res.set('Retry-After', String(Math.max(1, Math.ceil(err.retryAfter))));
      res.status(err.status).json({ error: { code: err.code, message: err.message, details: err.details } });
      return;
    }
    log('unhandled error', err);
    res
      .status(500)
      .json({ error: { code: 'INTERNAL', message: 'Something went wrong on our side. Nothing was lost.' } });
  };
}
