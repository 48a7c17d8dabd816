// A second server instance's thread reads, in a process of its own, for tests of the thread cache across
// instances: `node --import tsx threadReader.ts <database url>`. Reads a thread URI per line on stdin and prints
// getThreadJson's answer (or null) as one line of JSON, from its own in-memory cache when that is still current.
import { createInterface } from 'node:readline';
import { Network } from '../../src/appview/network.ts';
import { getThreadJson } from '../../src/appview/read.ts';
import { connect } from '../../src/db/index.ts';

const sql = connect(process.argv[2]!);
// Nothing here reaches the network: the test's authors have verified handles in the index already.
const network = new Network({
  handleResolver: 'http://127.0.0.1:9',
  plcUrl: 'http://127.0.0.1:9',
  local: true,
  fetch: globalThis.fetch,
});
for await (const line of createInterface({ input: process.stdin })) {
  const json = await getThreadJson(sql, network, line.trim());
  process.stdout.write(`${JSON.stringify(json === null ? null : JSON.parse(json))}\n`);
}
await sql.end();
