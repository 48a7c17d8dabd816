// A second (and third) server process, as far as OAuth goes: the app's real OAuth client on the shared
// database, in an OS process of its own, so no in-process lock can serialise it with the others. It says
// "ready", waits for "go" on stdin, restores the session (refreshing it when due), reads the repo through it,
// and prints what it saw as one JSON line.
import { Agent } from '@atproto/api';
import { createOAuthClient } from '../../src/auth/index.ts';
import { connect } from '../../src/db/index.ts';

const env = (k: string) => process.env[k] ?? (process.exit(2) as never);
const sql = connect(env('DATABASE_URL'));
let refreshes = 0;
const counting: typeof fetch = async (input, init) => {
  const req = new Request(input, init);
  const res = await fetch(req);
  // A refresh is a token request the PDS grants (a first try refused for a DPoP nonce is not one).
  if (req.method === 'POST' && new URL(req.url).pathname === '/oauth/token' && res.ok) refreshes++;
  return res;
};
const client = await createOAuthClient(sql, {
  baseUrl: env('BASE_URL'),
  privateKeys: [],
  handleResolver: env('PDS_URL'),
  plcUrl: env('PLC_URL'),
  allowHttp: true,
  fetch: counting,
});
process.stdout.write('ready\n');
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
try {
  const session = await client.restore(env('DID'), 'auto');
  const { expiresAt } = await session.getTokenInfo(false);
  const repo = await new Agent(session).com.atproto.repo.describeRepo({ repo: env('DID') });
  process.stdout.write(`${JSON.stringify({ refreshes, expiresAt, handle: repo.data.handle })}\n`);
} catch (e) {
  process.stdout.write(`${JSON.stringify({ refreshes, error: String(e) })}\n`);
}
await sql.end();
process.exit(0);
