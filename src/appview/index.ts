// appview/: our AppView of click.aligned.chat.*: the firehose indexer, the index, XRPC queries and the
// reader's API (with backfill from an author's repo when the index has not seen them).

export { backfillActor } from './backfill.ts';
export { type Indexer, startIndexer } from './indexer.ts';
export { setLookupTtl } from './lookups.ts';
export { Network, type NetworkOptions } from './network.ts';
export { readerSource } from './pages.ts';
export { getThread, listSessions } from './read.ts';
export { readerRoutes } from './routes.ts';
export {
  indexedUris,
  indexRecords,
  readIndexerFigures,
  removeRecord,
  removeRecords,
  underAuthorLock,
} from './store.ts';
export { type CoverOf, readThread, type ThreadView } from './thread.ts';
