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
 * Figures kept in the database (the index's cursor) are read at scrape time: one row, one statement.
 */
export function metricsRoute(deps: { sql: Sql; token?: string }): RequestHandler {
  return async (req, res, next) => {
    if (req.method !== 'GET' || req.path !== '/metrics') return next();
    if (!deps.token || !sameToken(bearer(req), deps.token)) return next();
    await readDatabaseFigures(deps.sql).catch(() => {});
    res.set('Content-Type', registry.contentType);
    res.set('Cache-Control', 'no-store');
    res.send(await registry.metrics());
  };
}

async function readDatabaseFigures(sql: Sql) {
  const [row] = await sql<{ age: number | null }[]>`select extract(epoch from now() - case
        when jetstream_cursor is not null then to_timestamp(jetstream_cursor / 1e6)
        else updated_at end)::float8 as age
      from index_state where id`;
  if (row?.age != null) metrics.indexerCursorAge.set(row.age);
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
