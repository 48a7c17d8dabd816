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

/**
 * Reads a body as it arrives and may refuse it before the rest is read (a bounded JSON parse). What `end` gives
 * is the body's value: the bytes are then not kept.
 */
export interface BodyReader {
  write(chunk: Uint8Array): Promise<void>;
  end(): unknown;
}

/** The value a BodyReader made of the body while it was read, if one did. */
export function bodyValue(req: Request): { value: unknown } | undefined {
  return req.res?.locals.bodyValue as { value: unknown } | undefined;
}

/**
 * Reads the request's bytes, at most `max`; a JSON body the JSON reader already took is passed on as it is.
 * `watch` is shown the first chunk and may return a reader that takes every chunk as it comes: its refusal answers
 * at once, and the rest of the body is let go unread into memory (Node discards it).
 */
export function readBytes(
  max: number,
  watch?: (first: Uint8Array) => BodyReader | undefined,
  /** What a reader's refusal is answered as (its own error otherwise). */
  refused: (e: unknown) => unknown = (e) => e,
): RequestHandler {
  const raw = express.raw({ type: () => true, limit: max });
  const tooLarge = () => new AppError('BODY_TOO_LARGE', `The file is larger than ${max / 1024 / 1024} MB.`);
  return (req, res, next) => {
    if ((res.locals.bodyError as { type?: string } | undefined)?.type === 'entity.too.large')
      return next(
        new AppError(
          'BODY_TOO_LARGE',
          `A JSON body is limited to ${BODY_LIMIT}: send the file as application/octet-stream (up to ${max / 1024 / 1024} MB).`,
        ),
      );
    if (Number(req.get('content-length') ?? 0) > max) return next(tooLarge());
    const encoded = (req.get('content-encoding') ?? 'identity').toLowerCase() !== 'identity';
    // Already read (a JSON body), or compressed (raw-body inflates it): read as before.
    if (!watch || encoded || req.readableEnded || (req as { _body?: boolean })._body)
      return raw(req, res, (err?: unknown) => {
        if (!err) return next();
        const large = (err as { type?: string }).type === 'entity.too.large';
        next(large ? tooLarge() : new AppError('INVALID_BODY', 'The file could not be read.'));
      });
    readWatched(req, max, watch, tooLarge).then(
      (body) => {
        if ('value' in body) res.locals.bodyValue = body;
        else req.body = body.bytes;
        next();
      },
      (e: unknown) => next(e instanceof AppError ? e : refused(e)),
    );
  };
}

function readWatched(
  req: Request,
  max: number,
  watch: (first: Uint8Array) => BodyReader | undefined,
  tooLarge: () => AppError,
): Promise<{ bytes: Buffer } | { value: unknown }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let reader: BodyReader | undefined;
    /** The chunk being parsed: 'end' may come before it is done. */
    let parsing: Promise<unknown> = Promise.resolve();
    let settled = false;
    const stop = (e: unknown) => {
      if (settled) return;
      settled = true;
      req.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onError);
      chunks.length = 0;
      // The rest is read and dropped by Node (the answer can still reach the client); nothing more is kept.
      req.resume();
      reject(e);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total > max) return stop(tooLarge());
      if (total === chunk.length) reader = watch(chunk);
      if (!reader) {
        chunks.push(chunk);
        return;
      }
      // No more arrives while this chunk is parsed (a slice per turn of the event loop).
      req.pause();
      parsing = reader.write(chunk).then(() => settled || req.resume(), stop);
    };
    const onEnd = () => parsing.then(finish);
    const finish = () => {
      if (settled) return;
      try {
        const body = reader ? { value: reader.end() } : { bytes: Buffer.concat(chunks, total) };
        settled = true;
        resolve(body);
      } catch (e) {
        stop(e);
      }
    };
    const onError = () => stop(new AppError('INVALID_BODY', 'The file could not be read.'));
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onError);
  });
}
