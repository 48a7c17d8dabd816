// db/: the postgres.js client, the migration runner, the embedded PostgreSQL, instance liveness, and leases
// (locks held without a connection, ADR 0054) with the in-process slots in front of them.
export {
  connect,
  connectionLost,
  databaseUnavailable,
  type Fragment,
  HELD_CONNECTIONS,
  inOneTripAnswered,
  type JsonValue,
  type Queryable,
  reconnectBackoff,
  reserve,
  type Sql,
  socketOptions,
  transaction,
} from './client.ts';
export { type EmbeddedDatabase, startEmbeddedPostgres } from './embedded.ts';
export { answered } from './heldLock.ts';
export { type Instance, LIVE_INSTANCES, registerInstance } from './instance.ts';
export { type Leadership, lead } from './leadership.ts';
export {
  currentLeases,
  type Lease,
  LeaseBusyError,
  LeaseLostError,
  Leases,
  type LeaseTerms,
} from './leases.ts';
export { LOCKS } from './locks.ts';
export { MIGRATIONS_DIR, migrate } from './migrate.ts';
export { KeyedSlots, SlotWaitError } from './slots.ts';
