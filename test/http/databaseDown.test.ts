import { afterAll, beforeAll, expect, it } from 'vitest';
import { writeBlob } from '../../src/attachments/index.ts';
import { databaseUnavailable, transaction } from '../../src/db/index.ts';
import type { TestApp } from '../support/app.ts';
import { startAppBehindProxy } from '../support/appBehindProxy.ts';
import type { TestDatabase } from '../support/db.ts';
import type { PgProxy } from '../support/pgProxy.ts';

// The database gone for a while (a restart, a failover): a request is told so, 503 with a time to try again, in the
// API's shape and in XRPC's, and the log says what happened, not "unhandled error". A server shutting down says it
// is restarting. Back once the database is.
let setup: Awaited<ReturnType<typeof startAppBehindProxy>>;
let db: TestDatabase;
let proxy: PgProxy;
let app: TestApp;
let cookie: string;
let logged: string[];
beforeAll(async () => {
  setup = await startAppBehindProxy();
  ({ db, proxy, app, logged } = setup);
  ({ cookie } = await app.signIn());
}, 60_000);
afterAll(() => setup?.close());

const LIST = '/xrpc/click.aligned.chat.listSessions';
const lines = (text: string) => logged.filter((l) => l.includes(text)).length;

it('answers 503 DATABASE_UNAVAILABLE with Retry-After while the database is gone, logged as that, and recovers', async () => {
  expect((await app.api('/api/conversations', { cookie })).status).toBe(200);
  expect((await fetch(`${app.url}${LIST}`)).status).toBe(200);
  const unhandled = lines('unhandled error');
  proxy.dropAll();

  const api = await app.api('/api/conversations', { cookie });
  expect(api.status).toBe(503);
  expect(api.headers.get('retry-after')).toBe('5');
  const body = (await api.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe('DATABASE_UNAVAILABLE');
  expect(body.error.message).toMatch(/cannot reach its database/);

  const xrpc = await fetch(`${app.url}${LIST}`);
  expect(xrpc.status).toBe(503);
  expect(xrpc.headers.get('retry-after')).toBe('5');
  expect(((await xrpc.json()) as { error: string }).error).toBe('NotEnoughResources');

  // The fault fired: the server's new connections were refused.
  expect(proxy.state.refused).toBeGreaterThan(0);
  expect(lines('database unavailable')).toBeGreaterThanOrEqual(2);
  expect(lines('unhandled error')).toBe(unhandled);

  proxy.accept();
  await expect
    .poll(async () => (await app.api('/api/conversations', { cookie })).status, {
      timeout: 15_000,
      interval: 200,
    })
    .toBe(200);
}, 60_000);

it('logs an XRPC failure that is not an outage, answered InternalServerError without internals', async () => {
  await db.sql`alter table index_sessions rename to index_sessions_away`;
  try {
    const before = lines('unhandled error');
    const res = await fetch(`${app.url}${LIST}`);
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe('InternalServerError');
    expect(body.message).not.toMatch(/index_sessions/);
    expect(lines('unhandled error')).toBe(before + 1);
  } finally {
    await db.sql`alter table index_sessions_away rename to index_sessions`;
  }
});

it('answers SHUTTING_DOWN, not an outage, when the database goes as this server shuts down', async () => {
  app.running.ctx.state.draining = true;
  proxy.dropAll();
  try {
    const before = lines('database unavailable');
    const res = await app.api('/api/conversations', { cookie });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('SHUTTING_DOWN');
    expect(lines('database unavailable')).toBe(before);
  } finally {
    proxy.accept();
    app.running.ctx.state.draining = false;
  }
}, 30_000);

it("takes only the database's own failures for an outage, not a DNS or socket error of other work", async () => {
  const coded = (code: string, extra: object = {}) => Object.assign(new Error(code), { code }, extra);
  // What other work meets (the outbound fetch's lookup, a child's pipe): a bug or that work's failure, not an outage.
  expect(databaseUnavailable(coded('ENOTFOUND'))).toBe(false);
  expect(databaseUnavailable(coded('EPIPE'))).toBe(false);
  // A socket's error postgres.js handed to a statement (it marks it with the statement) is one.
  expect(databaseUnavailable(coded('ECONNREFUSED', { query: 'select 1' }))).toBe(true);
  // The server's own words: shutting down is; a protocol violation (a client bug) and a syntax error are not.
  const { PostgresError } = (await import('postgres')).default;
  const pg = (code: string) => Object.assign(Object.create(PostgresError.prototype), { code });
  expect(databaseUnavailable(pg('57P01'))).toBe(true);
  expect(databaseUnavailable(pg('08006'))).toBe(true);
  expect(databaseUnavailable(pg('08P01'))).toBe(false);
  expect(databaseUnavailable(pg('42601'))).toBe(false);
  // A real statement whose connection was refused, as the server meets it.
  const before = proxy.state.refused;
  proxy.dropAll();
  try {
    const pool = (await import('postgres')).default(proxy.url, {
      max: 1,
      connect_timeout: 2,
      onnotice: () => {},
    });
    const failure = await pool`select 1`.catch((e: unknown) => e);
    expect(databaseUnavailable(failure)).toBe(true);
    // And a transaction's, whose connection is reserved first (postgres.js marks no statement then).
    const reserving = await transaction(pool, async (tx) => tx`select 1`).catch((e: unknown) => e);
    expect(databaseUnavailable(reserving)).toBe(true);
    expect(proxy.state.refused).toBeGreaterThan(before);
    await pool.end({ timeout: 1 });
  } finally {
    proxy.accept();
  }
});

it("takes a file's bytes that found the database gone for an outage too (its COPY reserves a connection)", async () => {
  const pool = (await import('postgres')).default(proxy.url, {
    max: 1,
    connect_timeout: 2,
    onnotice: () => {},
  });
  try {
    let cut!: () => void;
    let asked!: () => void;
    const gone = new Promise<void>((r) => {
      cut = r;
    });
    const staged = new Promise<void>((r) => {
      asked = r;
    });
    // The staging row is written (the bytes are asked for only then); before the first chunk's COPY, every
    // connection goes.
    const writing = writeBlob(
      pool,
      (async function* () {
        asked();
        await gone;
        yield new Uint8Array(10);
      })(),
      1000,
    ).catch((e: unknown) => e);
    await staged;
    const refused = proxy.state.refused;
    proxy.dropAll();
    // Once the pool has seen its connection go (a close event, within milliseconds): the COPY's reservation is what
    // meets the refusal. Had the COPY met the dead connection instead, the code below would say so.
    await new Promise((r) => setTimeout(r, 300));
    cut();
    const failure = await writing;
    expect(proxy.state.refused).toBeGreaterThan(refused);
    // The reservation's failure, which carries no statement (one met by the COPY would name it).
    expect(failure).toMatchObject({ code: 'ECONNRESET' });
    expect((failure as { query?: unknown }).query).toBeUndefined();
    expect(databaseUnavailable(failure)).toBe(true);
  } finally {
    proxy.accept();
    await pool.end({ timeout: 1 });
  }
});
