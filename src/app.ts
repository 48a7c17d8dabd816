import express, { type Express } from 'express';
import { requireSession } from './auth/index.ts';
import { conversationRoutes } from './conversations/index.ts';
import type { Sql } from './db/index.ts';
import { errorHandler, notFound, readJsonBody } from './http/index.ts';
import { turnRoutes } from './turn/index.ts';
import { type ProviderRegistry, villageRoutes } from './village/index.ts';

export interface AppDeps {
  sql: Sql;
  providers: ProviderRegistry;
  instanceId: number;
  adminDids: string[];
  checkpointMs: number;
  chunkTimeoutMs: number;
  log: (message: string, error?: unknown) => void;
}

/** Assembles the Express app from every room's routes; nothing else. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');

  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });

  const api = express.Router();
  api.use(requireSession(deps.sql));
  api.use(readJsonBody);
  api.use(villageRoutes(deps));
  api.use(conversationRoutes(deps));
  api.use(turnRoutes(deps));
  api.use(() => {
    throw notFound('Route');
  });
  app.use('/api', api);

  app.use(errorHandler(deps.log));
  return app;
}
