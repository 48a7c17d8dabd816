import postgres from 'postgres';

export type Sql = postgres.Sql;

export interface ConnectOptions {
  /** Connections in all (the server's: its query pool and HELD_CONNECTIONS). */
  max?: number;
  /** Shown in pg_stat_activity, so an operator can tell whose connections are whose. */
  name?: string;
  /** Called for every statement sent; the benchmark counts writes through it. */
  onQuery?: (query: string) => void;
}

const REPEATABLE_SERIALISERS = {
  json: {
    to: 3802,
    from: [114, 3802],
    serialize: (x: unknown) => (typeof x === 'string' ? x : JSON.stringify(x)),
    parse: (x: string) => JSON.parse(x),
  },
  boolean: {
    to: 16,
    from: [16],
    serialize: (x: unknown) => (x === true || x === 't' ? 't' : 'f'),
    parse: (x: string) => x === 't',
  },
  bytea: {
    to: 17,
    from: [17],
    serialize: (x: unknown) =>
      typeof x === 'string' ? x : `\\x${Buffer.from(x as Uint8Array).toString('hex')}`,
    parse: (x: string) => Buffer.from(x.slice(2), 'hex'),
  },
};

/**
 * Connections reserved for as long as the process runs, each holding a session lock: this instance's (db/instance.ts),
 * and, on the server that leads them, the AppView indexer's and the labelers' follower's (db/leadership.ts; one
 * that waits keeps none). They would otherwise be taken out of the pool the queries share (ADR 0074).
 */
export const HELD_CONNECTIONS = 3;

/**
 * libpq's way of naming a Unix socket in a URL, `postgres://user@/db?host=/run/postgresql` (and `&port=`, which
 * names the socket file): what Cloud SQL and most managed hosts hand out. postgres.js reads neither from the query
 * string; it passes both to the server as settings, which refuses them ("unrecognized configuration parameter
 * host"). Taken out of the URL here and given as options instead; any other URL is left as it is.
 */
export function socketOptions(url: string): { url: string; host?: string; port?: number } {
  const query = url.indexOf('?');
  if (query < 0) return { url };
  const params = new URLSearchParams(url.slice(query + 1));
  const host = params.get('host');
  if (!host?.startsWith('/')) return { url };
  const port = Number(params.get('port')) || undefined;
  params.delete('host');
  params.delete('port');
  // No host before the path (`user@/db`, `:///db`) is not a URL to Node: a placeholder, which the socket overrides.
  const base = url.slice(0, query).replace(/^([a-z]+:\/\/(?:[^@/]*@)?)(?=\/|$)/i, '$1localhost');
  const rest = params.toString();
  return { url: rest ? `${base}?${rest}` : base, host, ...(port ? { port } : {}) };
}

/**
 * Seconds before a pool slot connects again after its connection failed, by failures in a row (postgres.js's
 * `backoff`). Its default grows to 20 s, counted over the whole pool: after a database outage of 2.5 s the server
 * answered again only 30–60 s later (ADR 0101, through test/support/pgProxy.ts). Capped at 2 s it
 * is back within seconds, and a pool of a few slots asks a gone database a few times a second at most.
 */
export const reconnectBackoff = (retries: number): number =>
  (0.5 + Math.random() / 2) * Math.min(0.05 * 2 ** retries, 2);

export function connect(url: string, options: ConnectOptions = {}): Sql {
  const socket = socketOptions(url);
  return postgres(socket.url, {
    ...(socket.host ? { host: socket.host, ...(socket.port ? { port: socket.port } : {}) } : {}),
    max: options.max ?? 10,
    connection: { application_name: options.name ?? 'agentsville' },
    onnotice: () => {},
    backoff: reconnectBackoff,
    // postgres.js 3.4.9 serialises a statement's parameters in place, and when it re-sends a prepared statement the
    // server has lost (a migration changed its result, a pooler or DISCARD dropped it) it serialises them again
    // (porsager/postgres#1197; fixed upstream, not released). The three serialisers that are not idempotent are
    // made so (ADR 0073): a JSON value went as a JSON string of its own text, `true` went as false, bytes as the
    // hex of their hex. So a string given as JSON is sent as JSON text (sql.json takes objects and arrays here).
    types: REPEATABLE_SERIALISERS,
    debug: options.onQuery ? (_conn, query) => options.onQuery?.(query) : undefined,
  });
}

/** Either the pool or a transaction: what column helpers and queries inside `transaction` accept. */
export type Queryable = postgres.Sql | postgres.TransactionSql;
export type JsonValue = postgres.JSONValue;
/** A piece of SQL composed into another statement (`sql\`…\`` not awaited itself). */
export type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** A connection a transaction runs on (see `transaction`). */
export type Tx = postgres.ReservedSql;

/**
 * Runs `fn` in a transaction on a connection of its own: `sql.reserve()` (an idle connection, nothing else
 * pipelined on it), then BEGIN … COMMIT, or ROLLBACK when `fn` throws. Not `sql.begin`: postgres.js 3.4 can
 * write `sql.begin`'s BEGIN without reserving the connection when it fills a pipeline under load, so the
 * transaction fails with UNSAFE_TRANSACTION — and stays open on the server while unrelated queries run in it
 * (porsager/postgres#823, #1189; no release fixes it yet). Seen here at 200 concurrent turns.
 */
export async function transaction<T>(sql: Sql, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const tx = await reserve(sql);
  let open = false;
  let lost = false;
  try {
    // Pipelined: BEGIN goes out with `fn`'s first statement (one round trip fewer). BEGIN cannot fail on a
    // working connection, and on a broken one the statements behind it fail too.
    // BEGIN and COMMIT go as simple queries, never prepared: postgres.js re-sends a prepared statement the server
    // has lost (DISCARD, a pooler), and a COMMIT re-sent after its failure would answer ROLLBACK with no error.
    const begun = tx`begin`.simple().execute();
    begun.catch(() => {});
    open = true;
    const out = await fn(tx);
    await begun;
    open = false;
    await tx`commit`.simple();
    return out;
  } catch (e) {
    lost = connectionLost(e);
    if (open && !lost)
      await tx`rollback`.simple().catch((r: unknown) => {
        lost = connectionLost(r);
      });
    throw e;
  } finally {
    if (!lost) tx.release();
  }
}

/**
 * Whether an error of a transaction's own statement says its connection is gone: one of postgres.js's connection
 * errors, or the socket's. Nothing more is sent on such a connection, and it is not released: what is sent on it
 * fails at once with CONNECTION_CLOSED (postgres.js as patched at install, ADR 0104; unpatched, a TypeError thrown
 * from a timer, uncaught, ended the process, porsager/postgres#1208, or, once the pool had connected it again,
 * the statements ran outside the transaction). A released one would go back among the open
 * connections, dead. Left alone, the pool reconnects it when it needs it. The server's FATAL is not counted: it
 * reaches a query only as the stale error postgres.js hands the next query of a new, healthy connection (#1215).
 * So a transaction's `fn` should fail only with its statements' errors or its own (an fs or DNS error also has a
 * `syscall`, and would leave the connection held).
 */
export function connectionLost(e: unknown): boolean {
  if (typeof e !== 'object' || e === null || e instanceof postgres.PostgresError) return false;
  const { code } = e as { code?: unknown };
  return typeof code === 'string' && (code.startsWith('CONNECTION_') || SOCKET_GONE.has(code));
}
/**
 * Whether an error says the database cannot be reached just now, not that the request was wrong: postgres.js's
 * word for a connection lost or not made in time, a socket's error that postgres.js handed to a statement (it marks
 * those with the statement, so a DNS or pipe error of other work is not taken for one), or the server's own word
 * that it is shutting down, starting up or full (SQLSTATE class 08 but a protocol violation, 57P01–57P03, 53300).
 * A request that meets one is answered 503 with a time to try again.
 */
export function databaseUnavailable(e: unknown): boolean {
  if (typeof e !== 'object' || e === null) return false;
  if (e instanceof postgres.PostgresError)
    return (e.code.startsWith('08') && e.code !== '08P01') || UNAVAILABLE_STATES.has(e.code);
  const { code } = e as { code?: unknown };
  if (typeof code !== 'string') return false;
  if (code.startsWith('CONNECTION_') || code === 'CONNECT_TIMEOUT') return true;
  return (
    ('query' in e || FROM_POOL in e) &&
    (SOCKET_GONE.has(code) || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
  );
}
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** Marks a socket's error postgres.js gave a connection's reservation (it marks only a statement's). */
const FROM_POOL = Symbol('from the pool');

/** `sql.reserve()`, its failure marked as the pool's (see `databaseUnavailable`). */
export function reserve(sql: Sql): Promise<Tx> {
  return sql.reserve().catch((e: unknown) => {
    if (typeof e === 'object' && e !== null) Object.defineProperty(e, FROM_POOL, { value: true });
    throw e;
  });
}

const SOCKET_GONE = new Set([
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * BEGIN, the statements `issue` sends, and COMMIT, written together: one round trip where `transaction` takes two.
 * Only for statements that may be committed whatever they return — each writes only when its own conditions
 * hold, so nothing read from their results can call for a rollback. `issue` must send its statements before it
 * returns (`.execute()`), so they go out ahead of the COMMIT. A statement that fails aborts the transaction: the
 * COMMIT then rolls it back, and the failure is thrown. postgres.js re-sends a prepared statement whose plan went
 * stale (a migration meanwhile), and behind this COMMIT it would run outside the transaction: each statement must
 * also be safe run alone (the turn's claim checks it holds its lock, see conversations/turnStore.ts).
 *
 * It answers as soon as the statements have: PostgreSQL answers them before it flushes the COMMIT behind them.
 * `committed` settles once the COMMIT is answered, and rejects if it failed (see `connectionLost` for a failure
 * whose outcome is not known). The caller may show what the statements answered at once, and waits for
 * `committed` before anything that relies on their being stored (ADR 0099).
 */
export async function inOneTripAnswered<T>(
  sql: Sql,
  issue: (tx: Tx) => Promise<T>,
): Promise<{ out: T; committed: Promise<void> }> {
  const tx = await reserve(sql);
  // Nothing is ever sent after the COMMIT: whatever failed, it ended the transaction (a COMMIT after a failed
  // statement answers ROLLBACK), or the connection is gone and must not be released (`connectionLost`).
  let done = false;
  const release = (...failures: unknown[]) => {
    if (!done && !failures.some(connectionLost)) tx.release();
    done = true;
  };
  try {
    const begun = tx`begin`.simple().execute();
    const out = issue(tx);
    const commit = tx`commit`.simple().execute();
    // Each is awaited below; the others' rejections are not unhandled.
    for (const p of [begun, out, commit]) (p as Promise<unknown>).catch(() => {});
    const [, value] = await Promise.all([begun, out]).catch(async (e) => {
      const after = await commit.then(
        () => undefined,
        (c: unknown) => c,
      );
      release(e, after);
      throw e;
    });
    const committed = commit.then(
      () => release(),
      (e) => {
        release(e);
        throw e;
      },
    );
    // The caller may never wait for it (a refusal read from `out`): its failure is then only not unhandled.
    committed.catch(() => {});
    return { out: value, committed };
  } catch (e) {
    release(e);
    throw e;
  }
}
