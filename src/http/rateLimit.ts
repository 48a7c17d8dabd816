import type { Request, RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';

/**
 * Per client address, for routes anyone may call without signing in: `perMinute` requests a minute, then 429
 * with Retry-After. XRPC routes answer in the spec's error shape. Counted in this instance's memory: several
 * instances behind one address each allow the limit (a shared store would be PostgreSQL's job; not needed yet).
 */
export function publicRateLimit(perMinute: number): RequestHandler {
  return rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    handler: (req, res, _next, options) => {
      const message = `Too many requests from your address: at most ${perMinute} a minute. Try again shortly.`;
      res
        .status(options.statusCode)
        .json(
          req.originalUrl.startsWith('/xrpc/')
            ? { error: 'RateLimitExceeded', message }
            : { error: { code: 'RATE_LIMITED', message } },
        );
    },
  });
}

/**
 * `limit` requests a minute per key (a Player, for work a signed-in request starts: uploads, imports), then 429
 * RATE_LIMITED with `message`. Counted per instance, like the public limit.
 */
export function keyedRateLimit(
  limit: number,
  message: string,
  key: (req: Request, res: Response) => string,
): RequestHandler {
  return rateLimit({
    windowMs: 60_000,
    limit,
    keyGenerator: key,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    handler: (_req, res) => {
      res.status(429).json({ error: { code: 'RATE_LIMITED', message } });
    },
  });
}
