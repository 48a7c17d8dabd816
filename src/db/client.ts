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

/** Either the pool or a transaction: what column helpers and queries inside `sql.begin` accept. */
export type Queryable = postgres.Sql | postgres.TransactionSql;
export type JsonValue = postgres.JSONValue;
