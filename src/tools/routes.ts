import { Router } from 'express';
import { z } from 'zod';
import { currentPlayer } from '../auth/index.ts';
import { type Sql, transaction } from '../db/index.ts';
import { AppError, isUuid, notFound, parseBody, respond } from '../http/index.ts';
import { BlockedUrlError, type Outbound } from '../outbound/index.ts';
import {
  McpServerListResponse,
  McpServerResponse,
  MemoryListResponse,
  MemoryResponse,
  SkillListResponse,
  SkillResponse,
} from '../wire/index.ts';
import {
  addMcpServer,
  addSkill,
  deleteMcpServer,
  deleteMemory,
  deleteSkill,
  editMemory,
  listMcpServers,
  listSkills,
} from './catalog.ts';
import { addMemories, listMemories } from './memory.ts';
import { SkillInput } from './skills.ts';

const MemoryBody = z.object({ text: z.string().trim().min(1).max(2000) }).strict();
const McpBody = z
  .object({
    name: z.string().trim().min(1).max(60),
    url: z.url(),
    headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,64}$/), z.string().max(4000)).default({}),
  })
  .strict();

/** Skills, Memory and MCP Servers: what the Player manages (grants are saved with the NPC). Behind requireSession. */

export function toolRoutes(deps: { sql: Sql; toolOutbound: Outbound }): Router {
  const { sql } = deps;
  const router = Router();
  const own = (id: unknown, found: (id: string) => Promise<boolean>, what: string) => async () => {
    if (!isUuid(id) || !(await found(id))) throw notFound(what);
  };

  router.get('/skills', async (_req, res) => {
    respond(res, SkillListResponse, { skills: await listSkills(sql, currentPlayer(res).id) });
  });
  router.post('/skills', async (req, res) => {
    const s = parseBody(req, SkillInput);
    const skill = await addSkill(sql, currentPlayer(res).id, s);
    if (!skill) throw new AppError('DUPLICATE', `You already have a Skill named ${s.name}.`);
    respond(res, SkillResponse, { skill }, 201);
  });
  router.delete('/skills/:id', async (req, res) => {
    const player = currentPlayer(res);
    await own(req.params.id, (id) => deleteSkill(sql, player.id, id), 'Skill')();
    res.status(204).end();
  });

  router.get('/memories', async (_req, res) => {
    respond(res, MemoryListResponse, { memories: await listMemories(sql, currentPlayer(res).id) });
  });
  router.post('/memories', async (req, res) => {
    const player = currentPlayer(res);
    const { text } = parseBody(req, MemoryBody);
    const [memory] = await transaction(sql, (tx) => addMemories(tx, player.id, [text]));
    respond(res, MemoryResponse, { memory: memory! }, 201);
  });
  router.patch('/memories/:id', async (req, res) => {
    const { text } = parseBody(req, MemoryBody);
    const id = req.params.id;
    const memory = isUuid(id) ? await editMemory(sql, currentPlayer(res).id, id, text) : undefined;
    if (!memory) throw notFound('Memory');
    respond(res, MemoryResponse, { memory });
  });
  router.delete('/memories/:id', async (req, res) => {
    const player = currentPlayer(res);
    await own(req.params.id, (id) => deleteMemory(sql, player.id, id), 'Memory')();
    res.status(204).end();
  });

  router.get('/mcp-servers', async (_req, res) => {
    respond(res, McpServerListResponse, { servers: await listMcpServers(sql, currentPlayer(res).id) });
  });
  router.post('/mcp-servers', async (req, res) => {
    const body = parseBody(req, McpBody);
    try {
      await deps.toolOutbound.check(body.url);
    } catch (e) {
      if (e instanceof BlockedUrlError) throw new AppError('URL_NOT_ALLOWED', e.message);
      throw e;
    }
    respond(res, McpServerResponse, { server: await addMcpServer(sql, currentPlayer(res).id, body) }, 201);
  });
  router.delete('/mcp-servers/:id', async (req, res) => {
    const player = currentPlayer(res);
    await own(req.params.id, (id) => deleteMcpServer(sql, player.id, id), 'MCP Server')();
    res.status(204).end();
  });

  return router;
}
