import http from 'node:http';

/** The part of an Express application `listen` touches: it is the request handler of the server it makes. */
interface Listenable {
  listen: (...args: never[]) => http.Server;
}

export const LOOPBACK = '127.0.0.1';

/**
 * The PDS and the PLC start with `app.listen(port)`, which binds every interface; neither takes a host. Their
 * `start()` is kept (it starts the sequencer, the terminator, keep-alive), and only this app's `listen` is
 * replaced — on this instance, nothing global — by one that binds the port on 127.0.0.1, so the offline
 * network is not reachable from other machines.
 */
export function listenOnLoopback(app: Listenable): void {
  // The `listen` already there is kept and given the host: the XRPC server wraps it to attach its WebSocket
  // upgrades (the PDS's firehose, which the offline AppView follows), so a new server made here would have none.
  const listen = app.listen.bind(app) as unknown as (port: number, host: string) => http.Server;
  app.listen = ((port: number) => listen(port, LOOPBACK)) as Listenable['listen'];
}

/** A port free on 127.0.0.1 now, for a server configured with port 0 that must know its URL before it listens. */
export async function freeLoopbackPort(): Promise<number> {
  const probe = http.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, LOOPBACK, resolve);
  });
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (typeof address !== 'object' || !address) throw new Error('no port to listen on');
  return address.port;
}
