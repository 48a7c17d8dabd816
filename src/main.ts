import { ConfigError, loadConfig } from './config.ts';
import { start } from './server.ts';

const loopback = (url: string) => url.replace('//localhost:', '//127.0.0.1:');

try {
  const running = await start(loadConfig());
  console.log(`AgentsVille is listening on ${running.url}`);
  if (running.localnet) {
    console.log(
      // The PDS and PLC are named localhost (DID documents say so) but listen on 127.0.0.1 only: say where.
      `Offline mode: a local ATProto network on this machine only (PDS ${loopback(running.localnet.pdsUrl)}, PLC ${loopback(running.localnet.plcUrl)}).`,
    );
    console.log('Sign in with a demo account:');
    for (const a of running.localnet.accounts) console.log(`  ${a.handle}  password: ${a.password}`);
  }
  console.log(`\nOpen ${running.url} in your browser.`);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: shutting down`);
    // Ctrl-C reaches the whole process group, the embedded PostgreSQL too: it stops at once, and connections
    // still open (ours, the local PDS's) fail while we close. Expected now, so said in a line, not a stack.
    const quiet = (e: unknown) =>
      console.log(`  (while stopping: ${e instanceof Error ? e.message : String(e)})`.slice(0, 200));
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
  console.error(e instanceof ConfigError ? e.message : e);
  process.exit(1);
}
