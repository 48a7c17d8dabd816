import { Router } from 'express';
import { z } from 'zod';
import { currentPlayer } from '../auth/index.ts';
import type { Queryable, Sql } from '../db/index.ts';
import { transaction } from '../db/index.ts';
import { AppError, forbidden, isUuid, notFound, parseBody, parseQuery, respond } from '../http/index.ts';
import {
  GrantListResponse,
  ModelInfo,
  NpcListResponse,
  NpcResponse,
  VillageSettingsResponse,
  VillageView,
} from '../wire/index.ts';
import { inputSupport, thinkingSupport } from './capabilities.ts';
import { type GrantInput, GrantList, type GrantTargets, listGrants, toGrant, writeGrants } from './grants.ts';
import { createNpc, deleteNpc, getNpc, listNpcs, NpcInput, NpcPatch, updateNpc } from './npcs.ts';
import type { ProviderRegistry } from './providers.ts';
import { getVillageSettings, updateVillageSettings, VillageSettingsPatch } from './settings.ts';

const GrantsBody = z.object({ grants: GrantList }).strict();
const ModelQuery = z
  .object({ provider: z.string().min(1).max(64), model: z.string().min(1).max(200) })
  .strict();

export interface VillageDeps {
  sql: Sql;
  providers: ProviderRegistry;
  adminDids: string[];
  /** Whether a grant's Skill or MCP Server is the Player's (tools/' tables). */
  grantTargets: GrantTargets;
}

/** Village settings and NPC CRUD. Mounted behind requireSession. */
export function villageRoutes({ sql, providers, adminDids, grantTargets }: VillageDeps): Router {
  const router = Router();
  /** An NPC's grants, saved in the transaction that saves the NPC (left out: they stay as they are). */
  const saveGrants = (playerId: string, grants: GrantInput[] | undefined) =>
    grants &&
    ((tx: Queryable, npc: { id: string }) =>
      writeGrants(tx, grantTargets, playerId, npc.id, grants.map(toGrant)));

  const checkProvider = (provider: string | null | undefined) => {
    if (provider && !providers.has(provider)) {
      throw new AppError(
        'PROVIDER_NOT_CONFIGURED',
        `The Provider "${provider}" is not configured on this instance. Available: ${
          providers
            .list()
            .map((p) => p.id)
            .join(', ') || 'none'
        }.`,
      );
    }
  };

  router.get('/village', async (_req, res) => {
    const player = currentPlayer(res);
    respond(res, VillageView, {
      settings: await getVillageSettings(sql),
      providers: providers.list(),
      isAdmin: adminDids.includes(player.did),
    });
  });

  router.put('/village', async (req, res) => {
    const player = currentPlayer(res);
    if (!adminDids.includes(player.did)) throw forbidden('Only a Village admin can change its settings.');
    const patch = parseBody(req, VillageSettingsPatch);
    checkProvider(patch.defaultProvider);
    respond(res, VillageSettingsResponse, { settings: await updateVillageSettings(sql, patch, player.did) });
  });

  router.get('/models', (req, res) => {
    const q = parseQuery(req, ModelQuery);
    checkProvider(q.provider);
    const kind = providers.kindOf(q.provider);
    const thinking = thinkingSupport(kind, q.provider, q.model);
    respond(res, ModelInfo, {
      provider: q.provider,
      model: q.model,
      thinking,
      ...inputSupport(kind, q.provider, q.model),
    });
  });

  router.get('/npcs', async (_req, res) => {
    respond(res, NpcListResponse, { npcs: await listNpcs(sql, currentPlayer(res).id) });
  });

  router.post('/npcs', async (req, res) => {
    const player = currentPlayer(res);
    const { grants, ...input } = parseBody(req, NpcInput);
    checkProvider(input.provider);
    const { maxNpcs } = await getVillageSettings(sql);
    const npc = await createNpc(sql, player.id, input, maxNpcs, saveGrants(player.id, grants));
    respond(res, NpcResponse, { npc }, 201);
  });

  router.get('/npcs/:id', async (req, res) => {
    const player = currentPlayer(res);
    const npc = isUuid(req.params.id) ? await getNpc(sql, player.id, req.params.id) : undefined;
    if (!npc) throw notFound('NPC');
    respond(res, NpcResponse, { npc });
  });

  router.patch('/npcs/:id', async (req, res) => {
    const player = currentPlayer(res);
    const { grants, ...patch } = parseBody(req, NpcPatch);
    if (!isUuid(req.params.id)) throw notFound('NPC');
    checkProvider(patch.provider);
    const npc = await updateNpc(sql, player.id, req.params.id, patch, saveGrants(player.id, grants));
    if (!npc) throw notFound('NPC');
    respond(res, NpcResponse, { npc });
  });

  const ownNpc = async (playerId: string, id: string) => {
    const npc = isUuid(id) ? await getNpc(sql, playerId, id) : undefined;
    if (!npc) throw notFound('NPC');
    return npc;
  };
  router.get('/npcs/:id/grants', async (req, res) => {
    const npc = await ownNpc(currentPlayer(res).id, req.params.id);
    respond(res, GrantListResponse, { grants: await listGrants(sql, npc.id) });
  });
  // Kept for API clients; the web app saves grants with the NPC (PATCH /npcs/:id with `grants`).
  router.put('/npcs/:id/grants', async (req, res) => {
    const player = currentPlayer(res);
    const body = parseBody(req, GrantsBody);
    const npc = await ownNpc(player.id, req.params.id);
    await transaction(sql, (tx) =>
      writeGrants(tx, grantTargets, player.id, npc.id, body.grants.map(toGrant)),
    );
    respond(res, GrantListResponse, { grants: await listGrants(sql, npc.id) });
  });

  router.delete('/npcs/:id', async (req, res) => {
    const player = currentPlayer(res);
    if (!isUuid(req.params.id) || !(await deleteNpc(sql, player.id, req.params.id))) throw notFound('NPC');
    res.status(204).end();
  });

  return router;
}
