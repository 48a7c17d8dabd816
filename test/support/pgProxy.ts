import net from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL, for faults no server-side trick can make: the database gone for a while, as a
 * restart or a failover takes it (every connection dropped, new ones refused), or a COMMIT the database made whose
 * answer never reaches its client.
 * - `dropAll()`: every connection goes, and new ones are refused (reset as they open) until `accept()`.
 * - `dropClients()`: every connection goes on the client's side only.
 * - `stall()`: nothing gets through, and nothing closes, until `flow()`.
 * - `holdCommitAfter(marker)`: that COMMIT's answer never comes, and its connection goes silent, open.
 * - `cutCommitAfter(marker)`: the connection whose client next sends `marker` (a statement's parameter) has its next
 *   COMMIT answer dropped, and then `dropAll()`.
 * `state` counts the faults that fired.
 */
export async function startPgProxy(databaseUrl: string) {
  const target = new URL(databaseUrl);
  const socketDir = target.searchParams.get('host');
  const port = Number(target.port || target.searchParams.get('port') || 5432);
  const to = socketDir?.startsWith('/')
    ? { path: `${socketDir}/.s.PGSQL.${port}` }
    : { host: target.hostname, port };
  let marker: string | undefined;
  // What becomes of the marked COMMIT's answer: dropped with every connection, or dropped on a path that then
  // goes silent (the database hanging).
  let onCommit: 'cut' | 'hold' = 'cut';
  let refusing = false;
  // Half-open: what either side sends is dropped, and no connection closes, as on a network path that died quietly.
  let stalled = false;
  const state = { cuts: 0, holds: 0, drops: 0, refused: 0 };
  const sockets = new Set<net.Socket>();
  const clients = new Map<net.Socket, net.Socket>();
  const orphans = new Set<net.Socket>();
  const dropAll = () => {
    state.drops++;
    refusing = true;
    for (const s of sockets) s.destroy();
    sockets.clear();
    clients.clear();
    orphans.clear();
  };
  const server = net.createServer((client) => {
    if (refusing) {
      state.refused++;
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(to);
    sockets.add(client).add(upstream);
    let marked = false;
    let silent = false;
    // The end of the last chunk, so a marker split over two chunks is still seen.
    let tail = '';
    const end = () => {
      client.destroy();
      sockets.delete(client);
      // Orphaned (dropClients): the database's side stays open, its backend alive.
      if (orphans.has(upstream)) return;
      upstream.destroy();
      sockets.delete(upstream);
    };
    clients.set(client, upstream);
    client.on('data', (d: Buffer) => {
      if (marker) {
        const seen = tail + d.toString('latin1');
        if (seen.includes(marker)) marked = true;
        tail = seen.slice(-marker.length);
      }
      if (!stalled && !silent) upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      // CommandComplete ('C') with the tag COMMIT: the transaction is made; its client never learns so.
      if (marked && marker && d.includes('COMMIT\0')) {
        marker = undefined;
        if (onCommit === 'hold') {
          state.holds++;
          silent = true;
          return;
        }
        state.cuts++;
        dropAll();
        return;
      }
      if (!stalled && !silent) client.write(d);
    });
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: proxyPort } = server.address() as net.AddressInfo;
  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${proxyPort}`;
  url.searchParams.delete('host');
  url.searchParams.delete('port');
  return {
    url: url.toString(),
    state,
    dropAll,
    /**
     * Every connection goes on the client's side only: each backend lives on, holding what it held, as after a
     * network fault only the client saw. New connections still go through.
     */
    dropClients() {
      for (const [client, upstream] of clients) {
        orphans.add(upstream);
        client.destroy();
      }
      clients.clear();
    },
    cutCommitAfter(text: string) {
      marker = text;
      onCommit = 'cut';
    },
    /** The COMMIT after `text` is made, and its answer never comes: that connection goes silent, and stays open. */
    holdCommitAfter(text: string) {
      marker = text;
      onCommit = 'hold';
    },
    /** Nothing gets through either way, and nothing closes (a half-open path); until `flow()`. */
    stall() {
      stalled = true;
    },
    flow() {
      stalled = false;
    },
    /** The database is back: new connections go through again. */
    accept() {
      refusing = false;
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A running proxy (see startPgProxy). */
export type PgProxy = Awaited<ReturnType<typeof startPgProxy>>;
