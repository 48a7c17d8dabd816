import net from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL, for faults no server-side trick can make: a COMMIT the database made whose
 * answer never reaches the client. `cutCommitAfter(marker)`: the connection whose client next sends `marker` (a
 * statement's parameter) has its next COMMIT answer dropped with every connection, as a restart drops them, and for `refuseMs` after, new
 * connections are closed as they open (the database out of reach). `cuts` counts the faults that fired.
 */
export async function startPgProxy(databaseUrl: string) {
  const target = new URL(databaseUrl);
  const socketDir = target.searchParams.get('host');
  const port = Number(target.port || target.searchParams.get('port') || 5432);
  const to = socketDir?.startsWith('/')
    ? { path: `${socketDir}/.s.PGSQL.${port}` }
    : { host: target.hostname, port };
  let armed: { marker: string; refuseMs: number } | undefined;
  let refuseUntil = 0;
  const state = { cuts: 0, refused: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (Date.now() < refuseUntil) {
      state.refused++;
      client.destroy();
      return;
    }
    const upstream = net.connect(to);
    sockets.add(client).add(upstream);
    let marked = false;
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('data', (d: Buffer) => {
      if (armed && d.includes(armed.marker)) marked = true;
      upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      // CommandComplete ('C') with the tag COMMIT: the transaction is made; its client never learns so.
      if (marked && armed && d.includes('COMMIT\0')) {
        refuseUntil = Date.now() + armed.refuseMs;
        armed = undefined;
        state.cuts++;
        // As a database restart does: every connection goes, not only this one.
        for (const s of sockets) s.destroy();
        sockets.clear();
        return;
      }
      client.write(d);
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
    cutCommitAfter(marker: string, refuseMs: number) {
      armed = { marker, refuseMs };
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
