import { ConfigError, loadConfig } from './config.ts';
import { start } from './server.ts';

try {
  const running = await start(loadConfig());
  console.log(`AgentsVille is listening on ${running.url}`);
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
