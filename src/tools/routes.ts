import { Router } from 'express';
import { z } from 'zod';
import { currentPlayer } from '../auth/index.ts';
import { type JsonValue, LOCKS, type Sql, transaction } from '../db/index.ts';
import { AppError, isUuid, notFound, parseBody, respond } from '../http/index.ts';
import { BlockedUrlError, type Outbound } from '../outbound/index.ts';
import { assertStorageRoom } from '../storage/index.ts';
import {
  McpServerListResponse,
  McpServerResponse,
  MemoryListResponse,
  MemoryResponse,
  type MemoryView,
  SkillListResponse,
  SkillResponse,
  type SkillView,
} from '../wire/index.ts';
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

const MAX_MCP_SERVERS = 20;
const MAX_SKILLS = 200;

/** Skills, Memory and MCP Servers: what the Player manages (grants are saved with the NPC). Behind requireSession. */

export function toolRoutes(deps: { sql: Sql; toolOutbound: Outbound }): Router {
  const { sql } = deps;
  const router = Router();

  router.get('/skills', async (_req, res) => {
    const player = currentPlayer(res);
    respond(res, SkillListResponse, {
      skills: await sql<
        SkillView[]
      >`select id, name, description, instructions from skills where player_id = ${player.id} order by name`,
    });
  });
  router.post('/skills', async (req, res) => {
    const player = currentPlayer(res);
    const s = parseBody(req, SkillInput);
    const skill = await transaction(sql, async (tx) => {
      await tx`select pg_advisory_xact_lock(${LOCKS.counts}, hashtext(${player.id}))`;
      const [{ n }] = (await tx`select count(*)::int as n from skills where player_id = ${player.id}`) as [
        { n: number },
      ];
      // Every Skill granted to an NPC is listed in its prompt at each turn: a Player has a bounded number.
      if (n >= MAX_SKILLS)
        throw new AppError(
          'TOO_MANY_SKILLS',
          `You have ${MAX_SKILLS} Skills, the most one Player can have. Delete one first.`,
        );
      const [row] = await tx<SkillView[]>`insert into skills (player_id, name, description, instructions)
        values (${player.id}, ${s.name}, ${s.description}, ${s.instructions})
        on conflict (player_id, name) do nothing returning id, name, description, instructions`;
      return row;
    });
    if (!skill) throw new AppError('DUPLICATE', `You already have a Skill named ${s.name}.`);
    respond(res, SkillResponse, { skill }, 201);
  });
  router.delete('/skills/:id', async (req, res) => {
    const player = currentPlayer(res);
    const rows = isUuid(req.params.id)
      ? await sql`delete from skills where id = ${req.params.id} and player_id = ${player.id} returning id`
      : [];
    if (!rows.length) throw notFound('Skill');
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
    const player = currentPlayer(res);
    const { text } = parseBody(req, MemoryBody);
    const id = req.params.id;
    const rows = isUuid(id)
      ? await transaction(sql, async (tx) => {
          const edited = await tx<(MemoryView & { grew: boolean })[]>`
            with old as (select id, text from memories where id = ${id} and player_id = ${player.id} for update)
            update memories m set text = ${text} from old where m.id = old.id
            returning m.id, m.text, m.npc_name as "npcName", m.created_at as "createdAt",
              octet_length(m.text) > octet_length(old.text) as grew`;
          // An edit that adds bytes counts against the storage quota (ADR 0053); one that shortens never fails.
          if (edited[0]?.grew) await assertStorageRoom(tx, player.id);
          return edited.map(({ grew: _, ...m }) => m);
        })
      : [];
    if (!rows[0]) throw notFound('Memory');
    respond(res, MemoryResponse, { memory: rows[0] });
  });
  router.delete('/memories/:id', async (req, res) => {
    const player = currentPlayer(res);
    const rows = isUuid(req.params.id)
      ? await sql`delete from memories where id = ${req.params.id} and player_id = ${player.id} returning id`
      : [];
    if (!rows.length) throw notFound('Memory');
    res.status(204).end();
  });

  router.get('/mcp-servers', async (_req, res) => {
    const player = currentPlayer(res);
    const rows = await sql<{ id: string; name: string; url: string; headers: Record<string, string> }[]>`
      select id, name, url, headers from mcp_servers where player_id = ${player.id} order by name`;
    // Header values are secrets: the browser sees only their names.
    respond(res, McpServerListResponse, {
      servers: rows.map((r) => ({ id: r.id, name: r.name, url: r.url, headerNames: Object.keys(r.headers) })),
    });
  });
  router.post('/mcp-servers', async (req, res) => {
    const player = currentPlayer(res);
    const body = parseBody(req, McpBody);
    try {
      await deps.toolOutbound.check(body.url);
    } catch (e) {
      if (e instanceof BlockedUrlError) throw new AppError('URL_NOT_ALLOWED', e.message);
      throw e;
    }
    const server = await transaction(sql, async (tx) => {
      // Counted under the Player's count lock: requests sent at once cannot all pass the check.
      await tx`select pg_advisory_xact_lock(${LOCKS.counts}, hashtext(${player.id}))`;
      const [{ count }] =
        (await tx`select count(*)::int as count from mcp_servers where player_id = ${player.id}`) as [
          { count: number },
        ];
      // Every one is asked for its tools at each turn of an NPC granted it: a Player has a bounded number.
      if (count >= MAX_MCP_SERVERS) {
        throw new AppError(
          'TOO_MANY_MCP_SERVERS',
          `You have ${MAX_MCP_SERVERS} MCP Servers, the most one Player can add. Remove one first.`,
        );
      }
      const [row] = await tx<{ id: string; name: string; url: string }[]>`
        insert into mcp_servers (player_id, name, url, headers)
        values (${player.id}, ${body.name}, ${body.url}, ${tx.json(body.headers as JsonValue)})
        returning id, name, url`;
      return row!;
    });
    respond(res, McpServerResponse, { server: { ...server, headerNames: Object.keys(body.headers) } }, 201);
  });
  router.delete('/mcp-servers/:id', async (req, res) => {
    const player = currentPlayer(res);
    const rows = isUuid(req.params.id)
      ? await sql`delete from mcp_servers where id = ${req.params.id} and player_id = ${player.id} returning id`
      : [];
    if (!rows.length) throw notFound('MCP Server');
    res.status(204).end();
  });

  return router;
}
