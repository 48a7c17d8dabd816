// db/: the postgres.js client, the migration runner, the embedded PostgreSQL, and instance liveness.
export { connect, type JsonValue, type Queryable, type Sql, transaction } from './client.ts';
export { type EmbeddedDatabase, startEmbeddedPostgres } from './embedded.ts';
export { type Instance, LIVE_INSTANCES, registerInstance } from './instance.ts';
export { LOCKS } from './locks.ts';
export { MIGRATIONS_DIR, migrate } from './migrate.ts';
