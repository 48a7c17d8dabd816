import { type Request, type Response, Router } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import { z } from 'zod';
import { currentPlayer, playerIdOfDid } from '../auth/index.ts';
import { spendingByPlayer } from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import { AppError, forbidden, isUuid, keyedRateLimit, notFound, parseBody, respond } from '../http/index.ts';
import {
  BlockListResponse,
  BlockResponse,
  ReportCreated,
  ReportListResponse,
  SpendingResponse,
  TakedownListResponse,
  TakedownResponse,
} from '../wire/index.ts';
import {
  block,
  liftBlock,
  liftTakedown,
  listBlocks,
  listReports,
  listTakedowns,
  report,
  takeDown,
} from './store.ts';

const DID = z.string().regex(/^did:[a-z]+:[a-zA-Z0-9._:%-]{1,2000}$/, 'a DID such as did:plc:…');
const THREAD = z
  .string()
  .regex(
    /^at:\/\/did:[a-z]+:[a-zA-Z0-9._:%-]+\/click\.aligned\.chat\.session\/[a-z2-7]{13}$/,
    'a thread’s at:// URI',
  );
const Reason = z.string().trim().min(1, 'say why').max(1000);
const TakedownBody = z.object({ subject: z.union([THREAD, DID]), reason: Reason }).strict();
const BlockBody = z.object({ did: DID, reason: Reason }).strict();
const LiftBody = z.object({ reason: Reason }).strict();
const ReportBody = z.object({ uri: THREAD, reason: Reason }).strict();

export interface ModerationDeps {
  sql: Sql;
  adminDids: string[];
}

/** The admins' moderation: takedowns and blocks, each kept with who, when and why, and lifted the same way. */
export function moderationRoutes({ sql, adminDids }: ModerationDeps): Router {
  const router = Router();
  const admin = (res: Response) => {
    const player = currentPlayer(res);
    if (!adminDids.includes(player.did)) throw forbidden('Only a Village admin can moderate this instance.');
    return player.did;
  };
  const id = (req: Request, what: string) => {
    if (!isUuid(req.params.id)) throw notFound(what);
    return req.params.id as string;
  };

  router.get('/admin/takedowns', async (_req, res) => {
    admin(res);
    respond(res, TakedownListResponse, { takedowns: await listTakedowns(sql) });
  });
  router.post('/admin/takedowns', async (req, res) => {
    const by = admin(res);
    const body = parseBody(req, TakedownBody);
    const takedown = await takeDown(sql, body.subject, body.reason, by);
    if (!takedown) throw new AppError('ALREADY_TAKEN_DOWN', 'That is already hidden on this instance.');
    respond(res, TakedownResponse, { takedown }, 201);
  });
  router.post('/admin/takedowns/:id/lift', async (req, res) => {
    const by = admin(res);
    const takedown = await liftTakedown(sql, id(req, 'Takedown'), parseBody(req, LiftBody).reason, by);
    if (!takedown) throw notFound('Takedown');
    respond(res, TakedownResponse, { takedown });
  });

  router.get('/admin/blocks', async (_req, res) => {
    admin(res);
    respond(res, BlockListResponse, { blocks: await listBlocks(sql) });
  });
  router.post('/admin/blocks', async (req, res) => {
    const by = admin(res);
    const body = parseBody(req, BlockBody);
    const playerId = await playerIdOfDid(sql, body.did);
    if (!playerId) throw notFound('Player');
    const blocked = await block(sql, playerId, body.did, body.reason, by);
    if (!blocked) throw new AppError('ALREADY_BLOCKED', 'That Player is already blocked.');
    respond(res, BlockResponse, { block: blocked }, 201);
  });
  router.post('/admin/blocks/:id/lift', async (req, res) => {
    const by = admin(res);
    const lifted = await liftBlock(sql, id(req, 'Block'), parseBody(req, LiftBody).reason, by);
    if (!lifted) throw notFound('Block');
    respond(res, BlockResponse, { block: lifted });
  });

  // What each Player spent today and this month, beside the blocks: who to look at, and whom a block stops.
  router.get('/admin/spending', async (_req, res) => {
    admin(res);
    respond(res, SpendingResponse, { players: await spendingByPlayer(sql) });
  });

  router.get('/admin/reports', async (_req, res) => {
    admin(res);
    respond(res, ReportListResponse, { reports: await listReports(sql) });
  });
  return router;
}

/** A reader reports a thread: anyone, no account needed, a few a minute per address. */
export function reportRoutes({ sql }: { sql: Sql }): Router {
  const router = Router();
  const limited = keyedRateLimit(
    5,
    'Too many reports from your address: at most 5 a minute.',
    (req) => `report:${ipKeyGenerator(req.ip ?? '')}`,
  );
  router.post('/api/reader/reports', limited, async (req, res) => {
    const body = parseBody(req, ReportBody);
    const reporter = (res.locals.player as { did?: string } | undefined)?.did ?? null;
    const stored = await report(sql, body.uri, body.reason, reporter);
    respond(res, ReportCreated, { report: { id: stored.id, createdAt: stored.createdAt } }, 201);
  });
  return router;
}
