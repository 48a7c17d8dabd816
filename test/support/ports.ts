import net from 'node:net';

// Below the kernel's ephemeral range (32768–60999 on Linux): the OS never hands these out for listen(0) or
// outgoing connections, so a port chosen here and released stays free for the test that chose it — a server
// killed and restarted on its port (the local PDS's URL is in its DID documents) finds it still free.
const LOW = 20_000;
const HIGH = 32_000;
// Test files run at once in several workers, each choosing ports and binding them seconds later (a server's
// start, a restart after SIGKILL). Two workers drawing from one range could choose the same port in that window
// (CI once failed on EADDRINUSE so): each worker draws from a slice of its own.
const SLICES = 8;

const handedOut = new Set<number>();

/** The slice of [LOW, HIGH) this worker draws from: `VITEST_POOL_ID` is 1…maxWorkers, one per live worker. */
export function portSlice(poolId = process.env.VITEST_POOL_ID): { low: number; high: number } {
  const id = Number.parseInt(poolId ?? '', 10);
  const width = Math.floor((HIGH - LOW) / SLICES);
  const slice = Number.isSafeInteger(id) && id > 0 ? (id - 1) % SLICES : SLICES - 1;
  return { low: LOW + slice * width, high: LOW + (slice + 1) * width };
}

/** A port free right now on 127.0.0.1, never handed out before in this process, from this worker's slice. */
export async function freePort(): Promise<number> {
  const { low, high } = portSlice();
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(port)) continue;
    handedOut.add(port); // before the check, so a call running beside this one cannot choose it too
    if (await canListen(port)) return port;
    handedOut.delete(port);
  }
  throw new Error(`no free port found between ${low} and ${high}`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
