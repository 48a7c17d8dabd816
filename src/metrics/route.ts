import { timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Sql } from '../db/index.ts';
import { metrics, registry } from './registry.ts';

const sameToken = (given: string, expected: string) => {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
};

const bearer = (req: Request) => /^Bearer\s+(\S+)$/i.exec(req.get('authorization') ?? '')?.[1] ?? '';

/**
 * GET /metrics: the registry in Prometheus text format, for a scraper holding `token`. Without a token configured
 * the route does not exist (404), as it does not for a caller without the token: nothing says it is there.
 * Figures kept in the database (the index's cursor) are read at scrape time by `figures`: each room reads its own
 * tables and sets its gauges (app.ts hands them over; this room imports none).
 */
export function metricsRoute(deps: {
  sql: Sql;
  token?: string;
  figures: readonly ((sql: Sql) => Promise<void>)[];
}): RequestHandler {
  return async (req, res, next) => {
    if (req.method !== 'GET' || req.path !== '/metrics') return next();
    if (!deps.token || !sameToken(bearer(req), deps.token)) return next();
    await Promise.all(deps.figures.map((read) => read(deps.sql).catch(() => {})));
    res.set('Content-Type', registry.contentType);
    res.set('Cache-Control', 'no-store');
    res.send(await registry.metrics());
  };
}

/** Counts every 429 the app answers (rate limits, spending limits, busy) by its error code. */
export const countRefusals: RequestHandler = (_req, res, next) => {
  const json = res.json.bind(res);
  res.json = (body: unknown) => {
    if (res.statusCode === 429) {
      const e = (body as { error?: unknown } | undefined)?.error;
      const code =
        typeof e === 'string'
          ? e
          : typeof (e as { code?: unknown })?.code === 'string'
            ? (e as { code: string }).code
            : 'UNKNOWN';
      metrics.refusals.inc({ code: code.slice(0, 40) });
    }
    return json(body);
  };
  next();
};
