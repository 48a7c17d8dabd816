import net from 'node:net';
import { ConfigError } from './config.ts';

/**
 * Fails with a sentence, before anything starts, when a port this process must listen on is taken: the
 * Player sees which setting to change instead of an EADDRINUSE stack, and no database or network is left
 * half-started behind it. (A port taken between this check and the listen is reported the same way.)
 */
export async function ensurePortFree(host: string, port: number, variable: string): Promise<void> {
  if (port === 0) return;
  const probe = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen(port, host, () => resolve());
    });
  } catch (e) {
    throw portError(e, host, port, variable);
  } finally {
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  }
}

/** The error for a failed listen: a ConfigError naming the variable when the port is taken or not allowed. */
export function portError(e: unknown, host: string, port: number, variable: string): unknown {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE')
    return new ConfigError(
      `Port ${port} on ${host} is already in use — probably another AgentsVille, or another program. ` +
        `Stop it, or choose a free port: ${variable}=${port + 1} npm start`,
    );
  if (code === 'EACCES')
    return new ConfigError(
      `This user may not listen on port ${port}. Choose a port above 1023: ${variable}=${port < 1024 ? 3000 : port + 1} npm start`,
    );
  if (code === 'EADDRNOTAVAIL')
    return new ConfigError(
      `${host} is not an address of this machine. Set HOST to one (the default is 127.0.0.1).`,
    );
  return e;
}
