import postgres from 'postgres';

export type Sql = postgres.Sql;

export interface ConnectOptions {
  max?: number;
  /** Called for every statement sent; the benchmark counts writes through it. */
  onQuery?: (query: string) => void;
}

export function connect(url: string, options: ConnectOptions = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    // Keep bigints exact: message sequence numbers travel as strings.
    types: {},
    debug: options.onQuery ? (_conn, query) => options.onQuery?.(query) : undefined,
  });
}

/** Either the pool or a transaction: what column helpers and queries inside `transaction` accept. */
export type Queryable = postgres.Sql | postgres.TransactionSql;
export type JsonValue = postgres.JSONValue;

/** A connection a transaction runs on (see `transaction`). */
export type Tx = postgres.ReservedSql;

/**
 * Runs `fn` in a transaction on a connection of its own: `sql.reserve()` (an idle connection, nothing else
 * pipelined on it), then BEGIN … COMMIT, or ROLLBACK when `fn` throws. Not `sql.begin`: postgres.js 3.4.9 can
 * write `sql.begin`'s BEGIN without reserving the connection when it fills a pipeline under load, so the
 * transaction fails with UNSAFE_TRANSACTION — and stays open on the server while unrelated queries run in it
 * (porsager/postgres#823, #1189; no release fixes it yet). Seen here at 200 concurrent turns.
 */
export async function transaction<T>(sql: Sql, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const tx = await sql.reserve();
  let open = false;
  try {
    // Pipelined: BEGIN goes out with `fn`'s first statement (one round trip fewer). BEGIN cannot fail on a
    // working connection, and on a broken one the statements behind it fail too.
    const begun = tx`begin`.execute();
    begun.catch(() => {});
    open = true;
    const out = await fn(tx);
    await begun;
    open = false;
    await tx`commit`;
    return out;
  } catch (e) {
    if (open) await tx`rollback`.catch(() => {});
    throw e;
  } finally {
    tx.release();
  }
}
