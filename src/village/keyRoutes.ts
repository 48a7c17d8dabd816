import { Router } from 'express';
import { currentPlayer } from '../auth/index.ts';
import type { Sql } from '../db/index.ts';
import { AppError, forbidden, parseBody, respond } from '../http/index.ts';
import { ProviderKeysView } from '../wire/index.ts';
import {
  deleteProviderKey,
  ProviderKeyBody,
  providerKeysView,
  refreshProviderKeys,
  StorableProvider,
  storeProviderKey,
} from './providerKeys.ts';
import type { ProviderRegistry } from './providers.ts';
import type { SecretBox } from './secrets.ts';

export interface KeyDeps {
  sql: Sql;
  providers: ProviderRegistry;
  adminDids: string[];
  secrets?: SecretBox;
}

/**
 * A Village admin's Provider keys: `GET /village/keys`, `PUT /village/keys/:provider` {apiKey} and `DELETE`.
 * The answer never carries a key: where it comes from and its last four characters. The request body is never
 * logged (nothing here logs), and a refused key is not echoed back in the error.
 */
export function providerKeyRoutes({ sql, providers, adminDids, secrets }: KeyDeps): Router {
  const router = Router();
  const admin = (res: Parameters<typeof currentPlayer>[0]) => {
    const player = currentPlayer(res);
    if (!adminDids.includes(player.did))
      throw forbidden('Only a Village admin can see or change Provider keys.');
    return player;
  };
  const provider = (value: string | undefined) => {
    const parsed = StorableProvider.safeParse(value);
    if (!parsed.success)
      throw new AppError('NOT_FOUND', 'Keys can be added for openai, anthropic and google.');
    return parsed.data;
  };
  const answer = async (res: Parameters<typeof respond>[0]) =>
    respond(res, ProviderKeysView, await providerKeysView(sql, secrets, providers));

  router.get('/village/keys', async (_req, res) => {
    admin(res);
    await answer(res);
  });

  router.put('/village/keys/:provider', async (req, res) => {
    const player = admin(res);
    const id = provider(req.params.provider);
    if (!secrets)
      throw new AppError(
        'SECRETS_KEY_MISSING',
        'This server has no SECRETS_KEY to encrypt keys with, so it cannot store one. Set SECRETS_KEY (see the README) and restart, or set the Provider’s key in the environment.',
      );
    const { apiKey } = parseBody(req, ProviderKeyBody);
    await storeProviderKey(sql, secrets, id, apiKey, player.did);
    await refreshProviderKeys(sql, secrets, providers);
    await answer(res);
  });

  router.delete('/village/keys/:provider', async (req, res) => {
    admin(res);
    await deleteProviderKey(sql, provider(req.params.provider));
    await refreshProviderKeys(sql, secrets, providers);
    await answer(res);
  });

  return router;
}
