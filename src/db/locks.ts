/**
 * Every PostgreSQL advisory-lock class the server takes, in one place, so no two mean the same lock. Two-key
 * locks (class, id) show in pg_locks by class: the instance-liveness query counts every lock of its class, so
 * sharing a class would make something else look like a live server.
 */
// 7_240_003 (the OAuth request lock) and 7_240_007 (publications) were retired for leases (ADR 0054): a lock held
// while someone else's server is waited on must not hold a connection. Not to be reused.
export const LOCKS = {
  /** Applying migrations (one key). */
  migrations: 7_240_001,
  /** A live server instance, keyed by its id (see instance.ts). */
  instance: 7_240_002,
  /** The one indexer (one key). */
  indexerLeader: 7_240_004,
  /** Admitting one Player's turns one at a time (spending limits), keyed by a hash of the Player id. */
  spending: 7_240_005,
  /** Counting one Player's NPCs and Conversations, keyed by a hash of the Player id. */
  counts: 7_240_006,
  /** Counting what one Player's attachments take, as one is stored, keyed by a hash of the Player id. */
  attachmentQuota: 7_240_008,
  /** Writing one author's records into the index, where a backfill and a delete could race: keyed by DID hash. */
  indexAuthor: 7_240_009,
  /** The one follower of the configured labelers (one key). */
  labelsLeader: 7_240_010,
} as const;
