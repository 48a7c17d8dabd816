import type { Server } from 'node:http';
import path from 'node:path';
import { createApp } from './app.ts';
import type { Config } from './config.ts';
import { markInterrupted } from './conversations/index.ts';
import {
  connect,
  type EmbeddedDatabase,
  migrate,
  registerInstance,
  type Sql,
  startEmbeddedPostgres,
} from './db/index.ts';
import { ProviderRegistry } from './village/index.ts';

export interface Running {
  url: string;
  sql: Sql;
  server: Server;
  instanceId: number;
  close(): Promise<void>;
}

const defaultLog = (message: string, error?: unknown) => {
  if (error === undefined) console.log(message);
  else console.error(message, error);
};

/** Start: config -> database (embedded when DATABASE_URL is unset) -> migrations -> app -> listen. */
export interface StartOptions {
  /** Sees every SQL statement the server sends; the benchmark counts them. */
  onQuery?: (query: string) => void;
}

export async function start(config: Config, log = defaultLog, options: StartOptions = {}): Promise<Running> {
  let embedded: EmbeddedDatabase | undefined;
  let url = config.databaseUrl;
  if (!url) {
    embedded = await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'));
    url = embedded.url;
    log(`Embedded PostgreSQL running (data in ${path.join(config.dataDir, 'postgres')})`);
  }
  const sql = connect(url, { onQuery: options.onQuery });
  await migrate(sql);
  const instance = await registerInstance(sql);
  const interrupted = await markInterrupted(sql);
  if (interrupted) log(`Marked ${interrupted} reply(s) left mid-stream as interrupted.`);

  const app = createApp({
    sql,
    providers: new ProviderRegistry(config.providers),
    instanceId: instance.id,
    adminDids: config.adminDids,
    checkpointMs: config.checkpointMs,
    chunkTimeoutMs: config.providerChunkTimeoutMs,
    log,
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, config.host, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  return {
    url: `http://${config.host}:${port}`,
    sql,
    server,
    instanceId: instance.id,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await instance.release();
      await sql.end({ timeout: 5 });
      await embedded?.stop();
    },
  };
}
