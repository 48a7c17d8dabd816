import net from 'node:net';

// Below the kernel's ephemeral range (32768–60999 on Linux): the OS never hands these out for listen(0) or
// outgoing connections, so a port chosen here and released stays free for the test that chose it — a server
// killed and restarted on its port (the local PDS's URL is in its DID documents) finds it still free.
const LOW = 20_000;
const HIGH = 32_000;

/** A port free right now on 127.0.0.1, from outside the ephemeral range. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (await canListen(port)) return port;
  }
  throw new Error('no free port found between 20000 and 32000');
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
