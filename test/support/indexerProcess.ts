// An indexer in a process of its own, for tests of leadership across processes: `node --import tsx
// indexerProcess.ts <database url> <ws service> <plc url> [relay|jetstream]`. Prints "leading" once it is the leader.
import { startIndexer } from '../../src/appview/index.ts';
import { connect } from '../../src/db/index.ts';

const [databaseUrl, service, plcUrl, kind = 'relay'] = process.argv.slice(2) as [
  string,
  string,
  string,
  string?,
];
const indexer = startIndexer({
  sql: connect(databaseUrl),
  source: { kind: kind === 'jetstream' ? 'jetstream' : 'relay', url: service },
  plcUrl,
  local: true,
  fetch: globalThis.fetch,
  // Said on stderr, which the test shows: a leader that cannot follow the stream says why.
  log: (message, error) => console.error(message, error ?? ''),
  retryMs: 200,
});
await indexer.leading;
console.log('leading');
