import { readFileSync } from 'node:fs';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError, errorHandler, inFlightLimit, publicRateLimit } from '../../src/http/index.ts';
import { ErrorFrame } from '../../src/parts/index.ts';
import {
  ERRORS,
  FRAME_ERROR_CODES,
  type HttpErrorCode,
  isHttpErrorCode,
  statusesOf,
} from '../../src/wire/index.ts';

const docs = readFileSync(new URL('../../docs/http-api.md', import.meta.url), 'utf8');

/** The `## Errors` table: each row's statuses and codes (a row may name several, `A` / `B`). */
function documentedErrors(): Map<string, number[]> {
  const start = docs.indexOf('## Errors');
  const section = docs.slice(start, docs.indexOf('\n## ', start + 1));
  const rows = new Map<string, number[]>();
  for (const [, status, codes] of section.matchAll(/^\| ([\d /]+) \| ([^|]+) \|/gm)) {
    for (const [, code] of codes!.matchAll(/`([A-Za-z_]+)`/g))
      rows.set(
        code!,
        status!.split('/').map((s) => Number(s.trim())),
      );
  }
  return rows;
}

describe('the error catalog', () => {
  it('is the docs’ error table, both ways, with the same statuses', () => {
    const documented = documentedErrors();
    const catalog = Object.keys(ERRORS) as HttpErrorCode[];
    expect(catalog.filter((c) => !documented.has(c))).toEqual([]);
    expect([...documented.keys()].filter((c) => !isHttpErrorCode(c))).toEqual([]);
    for (const code of catalog) expect([code, documented.get(code)]).toEqual([code, [...statusesOf(code)]]);
  });

  it('has every SSE error frame code in the docs’ frame table, and no other', () => {
    const row = docs.split('\n').find((l) => l.startsWith('| `error` |'))!;
    // The codes, without what the parentheses say of them (settings such as `REPLY_MAX_MS`).
    let codes = row.slice(row.indexOf('Codes:'));
    while (/\([^()]*\)/.test(codes)) codes = codes.replace(/\([^()]*\)/g, '');
    const listed = [...codes.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]);
    expect(new Set(listed)).toEqual(new Set(FRAME_ERROR_CODES));
  });

  it('refuses an error frame whose code is not in it', () => {
    const frame = { type: 'error', messageId: null, message: 'x' };
    expect(ErrorFrame.safeParse({ ...frame, code: 'PROVIDER_TIMEOUT' }).success).toBe(true);
    expect(ErrorFrame.safeParse({ ...frame, code: 'SOMETHING_ELSE' }).success).toBe(false);
  });
});

describe('AppError', () => {
  it('answers with the status the catalog gives its code', () => {
    expect(new AppError('TOO_MANY_NPCS', 'x').status).toBe(429);
    expect(new AppError('STORAGE_FULL', 'x').status).toBe(507);
    expect(new AppError('NOT_FOUND', 'x').status).toBe(404);
  });

  it('takes a second status only where the catalog lists one, the usual one otherwise', () => {
    expect(new AppError('BUSY', 'x').status).toBe(429);
    expect(new AppError('BUSY', 'x', { status: 503 }).status).toBe(503);
    expect(new AppError('NOT_PUBLISHED', 'x', { status: 404 }).status).toBe(404);
    // @ts-expect-error: a code with one status takes no choice of status
    expect(new AppError('TOO_MANY_NPCS', 'x', { status: 503 }).status).toBe(429);
    // @ts-expect-error: only the catalog's second status, not any number
    expect(new AppError('BUSY', 'x', { status: 500 }).status).toBe(429);
  });

  it('keeps its cause, which is never sent', () => {
    const cause = new Error('socket closed');
    expect(new AppError('PDS_UNREACHABLE', 'x', { cause }).cause).toBe(cause);
  });
});

describe('every error body is written by one writer', () => {
  let base: string;
  let close: () => void;
  beforeAll(async () => {
    const app = express();
    app.use('/xrpc', publicRateLimit(1));
    app.use('/limited', publicRateLimit(1));
    app.use(
      '/busy',
      inFlightLimit(0, 10, 'Wait for the other import.', () => 'me'),
    );
    app.get('/thrown', () => {
      throw new AppError('STORAGE_FULL', 'Full.', { details: { used: 2, quota: 1 }, retryAfter: 2.5 });
    });
    app.get('/bug', () => {
      throw new Error('internal detail');
    });
    app.get(['/limited', '/xrpc/x'], (_req, res) => void res.json({ ok: true }));
    app.use(errorHandler(() => {}));
    const server = app.listen(0);
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    close = () => server.close();
  });
  afterAll(() => close());

  const get = async (path: string) => {
    const res = await fetch(base + path);
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
  };

  it('a thrown AppError: its status, code, message, details and Retry-After', async () => {
    expect(await get('/thrown')).toEqual({
      status: 507,
      retryAfter: '3',
      body: { error: { code: 'STORAGE_FULL', message: 'Full.', details: { used: 2, quota: 1 } } },
    });
  });

  it('anything else: INTERNAL, without its internals', async () => {
    expect(await get('/bug')).toEqual({
      status: 500,
      retryAfter: null,
      body: { error: { code: 'INTERNAL', message: 'Something went wrong on our side. Nothing was lost.' } },
    });
  });

  it('the rate limits and the in-flight limit, in the same shape (XRPC in the spec’s)', async () => {
    await get('/limited');
    const limited = await get('/limited');
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: { code: 'RATE_LIMITED' } });
    expect(limited.retryAfter).not.toBeNull();
    await get('/xrpc/x');
    const xrpc = await get('/xrpc/x');
    expect([xrpc.status, xrpc.body]).toMatchObject([429, { error: 'RateLimitExceeded' }]);
    expect(await get('/busy')).toEqual({
      status: 429,
      retryAfter: null,
      body: { error: { code: 'BUSY', message: 'Wait for the other import.' } },
    });
  });
});
