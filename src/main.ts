import { type Config, ConfigError, loadConfig } from './config.ts';
import { createLogger } from './log/index.ts';
import { start } from './server.ts';

const loopback = (url: string) => url.replace('//localhost:', '//127.0.0.1:');

let config: Config;
try {
  config = loadConfig();
} catch (e) {
  createLogger({ format: process.env.NODE_ENV === 'production' ? 'json' : 'pretty' }).fatal(
    e instanceof ConfigError ? e.message : { err: e },
  );
  process.exit(1);
}
const logger = createLogger(config.log);
const log = logger.child({ subsystem: 'server' });

try {
  const running = await start(config, logger);
  log.info(`AgentsVille is listening on ${running.url}`);
  if (running.localnet) {
    log.info(
      // The PDS and PLC are named localhost (DID documents say so) but listen on 127.0.0.1 only: say where.
      `Offline mode: a local ATProto network on this machine only (PDS ${loopback(running.localnet.pdsUrl)}, PLC ${loopback(running.localnet.plcUrl)}).`,
    );
    // Demo accounts on this machine's own network: their passwords are on the sign-in page too.
    log.info('Sign in with a demo account:');
    for (const a of running.localnet.accounts) log.info(`  ${a.handle}  password: ${a.password}`);
  }
  log.info(`Open ${running.url} in your browser.`);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: shutting down`);
    // Ctrl-C reaches the whole process group, the embedded PostgreSQL too: it stops at once, and connections
    // still open (ours, the local PDS's) fail while we close. Expected now, so said in a line, not a stack.
    const quiet = (e: unknown) =>
      log.info(`  (while stopping: ${e instanceof Error ? e.message : String(e)})`.slice(0, 200));
    process.on('uncaughtException', quiet);
    process.on('unhandledRejection', quiet);
    // Bounded: a client whose server went first may never finish closing (postgres.js after a killed socket).
    // Ctrl-C reached the embedded PostgreSQL too, which stops on its own: 5 s. A SIGTERM reached only us, and
    // we stop the database: long enough for close's steps (each pool ends within 5 s) and its stop.
    const bound = new Promise<void>((r) => setTimeout(r, signal === 'SIGINT' ? 5_000 : 20_000).unref());
    await Promise.race([running.close().catch(quiet), bound]);
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
} catch (e) {
  // A setting to change (a port in use, say) is a sentence for the person starting it, not a stack.
  if (e instanceof ConfigError) log.fatal(e.message);
  else log.fatal({ err: e }, 'could not start');
  process.exit(1);
}
