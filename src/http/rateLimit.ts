import type { Request, RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import type { Sql } from '../db/index.ts';
import { AppError, sendError } from './errors.ts';
import { PgRateStore } from './rateStore.ts';

/**
 * Where a limiter counts: `shared` (the database, and a name for this limiter) counts across every server
 * instance; without it, this instance's memory (tests of pure units). A counter that cannot be reached lets the
 * request through rather than refuse everyone.
 */
export interface SharedCount {
  sql: Sql;
  name: string;
}
const counting = (shared: SharedCount | undefined) =>
  shared ? { store: new PgRateStore(shared.sql, shared.name), passOnStoreError: true } : {};

/**
 * Per client address, for routes anyone may call without signing in: `perMinute` requests a minute, then 429
 * with Retry-After. XRPC routes answer in the spec's error shape.
 */
export function publicRateLimit(perMinute: number, shared?: SharedCount): RequestHandler {
  return rateLimit({
    ...counting(shared),
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    handler: (req, res) => {
      const message = `Too many requests from your address: at most ${perMinute} a minute. Try again shortly.`;
      // The limiter has set Retry-After itself.
      if (req.originalUrl.startsWith('/xrpc/'))
        sendError(res, new AppError('RateLimitExceeded', message), 'xrpc');
      else sendError(res, new AppError('RATE_LIMITED', message));
    },
  });
}

/**
 * `limit` requests a minute per key (a Player, for work a signed-in request starts: uploads, imports), then 429
 * RATE_LIMITED with `message`. Counted across instances when `shared` is given, like the public limit.
 */
export function keyedRateLimit(
  limit: number,
  message: string,
  key: (req: Request, res: Response) => string,
  shared?: SharedCount,
): RequestHandler {
  return rateLimit({
    ...counting(shared),
    windowMs: 60_000,
    limit,
    keyGenerator: key,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    handler: (_req, res) => {
      sendError(res, new AppError('RATE_LIMITED', message));
    },
  });
}

/**
 * At most `perKey` requests in flight per key and `total` in all on this instance (work that holds much memory
 * while it runs, such as an import); past either, 429 BUSY with `message`. Released when the response closes.
 */
export function inFlightLimit(
  perKey: number,
  total: number,
  message: string,
  key: (req: Request, res: Response) => string,
): RequestHandler {
  const running = new Map<string, number>();
  let all = 0;
  return (req, res, next) => {
    const k = key(req, res);
    const mine = running.get(k) ?? 0;
    if (mine >= perKey || all >= total) {
      sendError(res, new AppError('BUSY', message));
      return;
    }
    running.set(k, mine + 1);
    all++;
    res.once('close', () => {
      all--;
      const left = (running.get(k) ?? 1) - 1;
      if (left > 0) running.set(k, left);
      else running.delete(k);
    });
    next();
  };
}
