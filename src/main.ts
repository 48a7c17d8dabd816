import { ConfigError, loadConfig } from './config.ts';
import { start } from './server.ts';

try {
  const running = await start(loadConfig());
  console.log(`AgentsVille is listening on ${running.url}`);
  if (running.localnet) {
    console.log(
      `Offline mode: a local ATProto network (PDS ${running.localnet.pdsUrl}, PLC ${running.localnet.plcUrl}).`,
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
    await running.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
} catch (e) {
  console.error(e instanceof ConfigError ? e.message : e);
  process.exit(1);
}
