import express, { type Request, type RequestHandler } from 'express';
import type { z } from 'zod';
import { AppError, invalidBody } from './errors.ts';

const BODY_LIMIT = '1mb';
const json = express.json({ limit: BODY_LIMIT });

/**
 * Parses JSON bodies without failing the request: a malformed or oversized body is remembered and reported
 * by `parseBody`, after the session check, so the refusal order is always 401 before 400.
 * Only `application/json` is read: a form or text/plain POST (what a cross-site page can send without a
 * preflight) has no body here and is refused as INVALID_BODY. That is the CSRF defence (seed 003).
 */
export const readJsonBody: RequestHandler = (req, res, next) => {
  json(req, res, (err?: unknown) => {
    if (err) {
      req.body = undefined;
      res.locals.bodyError = err;
    }
    next();
  });
};

export function parseBody<S extends z.ZodType>(req: Request, schema: S): z.infer<S> {
  const bodyError = req.res?.locals.bodyError as { type?: string } | undefined;
  if (bodyError?.type === 'entity.too.large') {
    throw new AppError('BODY_TOO_LARGE', `The request body is larger than ${BODY_LIMIT}.`);
  }
  if (bodyError) throw new AppError('INVALID_BODY', 'The request body is not valid JSON.');
  if (!req.is('application/json')) {
    throw new AppError('INVALID_BODY', 'The request body must be JSON (Content-Type: application/json).');
  }
  const parsed = schema.safeParse(req.body);
  if (!parsed.success) throw invalidBody(parsed.error);
  return parsed.data;
}

export function parseQuery<S extends z.ZodType>(req: Request, schema: S): z.infer<S> {
  const parsed = schema.safeParse(req.query);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new AppError('INVALID_QUERY', `The query is not valid: ${first?.message ?? 'unreadable'}.`);
  }
  return parsed.data;
}

/** Route ids are UUIDs; anything else cannot name a row, so it is answered like a missing one. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

/** Reads the request's bytes, at most `max`; a JSON body the JSON reader already took is passed on as it is. */
export function readBytes(max: number): RequestHandler {
  const raw = express.raw({ type: () => true, limit: max });
  return (req, res, next) => {
    if ((res.locals.bodyError as { type?: string } | undefined)?.type === 'entity.too.large')
      return next(
        new AppError(
          'BODY_TOO_LARGE',
          `A JSON body is limited to ${BODY_LIMIT}: send the file as application/octet-stream (up to ${max / 1024 / 1024} MB).`,
        ),
      );
    if (Number(req.get('content-length') ?? 0) > max)
      return next(new AppError('BODY_TOO_LARGE', `The file is larger than ${max / 1024 / 1024} MB.`));
    raw(req, res, (err?: unknown) => {
      if (!err) return next();
      const large = (err as { type?: string }).type === 'entity.too.large';
      next(
        large
          ? new AppError('BODY_TOO_LARGE', `The file is larger than ${max / 1024 / 1024} MB.`)
          : new AppError('INVALID_BODY', 'The file could not be read.'),
      );
    });
  };
}
