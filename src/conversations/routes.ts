import { Router } from 'express';
import { z } from 'zod';
import { currentPlayer, playerKey } from '../auth/index.ts';
import type { Sql } from '../db/index.ts';
import { AppError, isUuid, keyedRateLimit, notFound, parseBody, parseQuery, respond } from '../http/index.ts';
import { plainName } from '../parts/index.ts';
import { storageUse } from '../storage/index.ts';
import { removeSandbox } from '../tools/index.ts';
import { getVillageSettings } from '../village/index.ts';
import {
  ConversationCreated,
  ConversationListResponse,
  ConversationPage,
  ConversationResponse,
  MessagePage,
  SearchResponse,
  UsageResponse,
} from '../wire/index.ts';
import { searchMessages } from './search.ts';
import {
  createConversation,
  deleteConversation,
  getConversation,
  getParticipants,
  listConversations,
  listMessages,
  PAGE_MAX_BYTES,
  type PublicationStatusSql,
  renameConversation,
  setReplyMode,
  switchBranch,
} from './store.ts';
import { usageByDay } from './usage.ts';

const CreateBody = z
  .object({
    npcIds: z.array(z.uuid()).min(1, 'pick at least one NPC').max(12),
    title: z.string().max(800).transform(plainName).pipe(z.string().min(1).max(200)).optional(),
  })
  .strict();
const RenameBody = z
  .object({
    title: z
      .string()
      .max(800)
      .transform(plainName)
      .pipe(z.string().min(1, 'a title cannot be empty').max(200))
      .optional(),
    /** In a Party: `one` NPC answers each Message, or `each` NPC in turn (issue 29). */
    replyMode: z.enum(['one', 'each']).optional(),
  })
  .strict();
const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(30),
  cursor: z.string().max(200).optional(),
});
const MessagesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z
    .string()
    .regex(/^\d{1,19}$/, 'before is a message seq')
    .refine((v) => BigInt(v) <= 9_223_372_036_854_775_807n, 'before is a message seq')
    .optional(),
  /** A smaller byte budget for the page than the server's (ADR 0053); never a larger one. */
  maxBytes: z.coerce.number().int().min(1024).max(PAGE_MAX_BYTES).default(PAGE_MAX_BYTES),
});

const SearchQuery = z.object({
  q: z.string().trim().min(1, 'type something to search for').max(200),
  limit: z.coerce.number().int().min(1).max(50).default(20),
});
const BranchBody = z.object({ messageId: z.uuid() }).strict();
const UsageQuery = z.object({
  by: z.enum(['npc', 'conversation']).default('npc'),
  days: z.coerce.number().int().min(1).max(366).default(30),
});

const encodeCursor = (c: { updatedAt: Date; id: string }) =>
  Buffer.from(`${c.updatedAt.toISOString()}|${c.id}`).toString('base64url');
function decodeCursor(raw: string): { updatedAt: Date; id: string } {
  const [iso, id] = Buffer.from(raw, 'base64url').toString().split('|');
  const updatedAt = new Date(iso ?? '');
  if (!id || !isUuid(id) || Number.isNaN(updatedAt.getTime())) {
    throw new AppError('INVALID_QUERY', 'The cursor is not one this server gave out.');
  }
  return { updatedAt, id };
}

/** Conversations and their Messages. Mounted behind requireSession. */
export function conversationRoutes({
  sql,
  dataDir,
  pathMoved,
  publicationStatus,
}: {
  sql: Sql;
  dataDir: string;
  /** Told before another branch is shown (live publishing restarts its hold-back window). Never throws. */
  pathMoved?: (conversationId: string) => Promise<void>;
  /** The list's publication status of each Conversation, in its statement (publish's, wired by app.ts). */
  publicationStatus: PublicationStatusSql;
}): Router {
  const router = Router();

  const owned = async (playerId: string, id: unknown) => {
    const conversation = isUuid(id) ? await getConversation(sql, playerId, id) : undefined;
    if (!conversation) throw notFound('Conversation');
    return conversation;
  };

  router.post('/conversations', async (req, res) => {
    const player = currentPlayer(res);
    const body = parseBody(req, CreateBody);
    const { maxConversations } = await getVillageSettings(sql);
    const conversation = await createConversation(
      sql,
      player.id,
      body.npcIds,
      body.title ?? null,
      maxConversations,
      player.handle ?? undefined,
    );
    respond(
      res,
      ConversationCreated,
      { conversation, participants: await getParticipants(sql, conversation.id) },
      201,
    );
  });

  router.get('/conversations', async (req, res) => {
    const player = currentPlayer(res);
    const q = parseQuery(req, ListQuery);
    const rows = await listConversations(
      sql,
      player.id,
      { limit: q.limit, before: q.cursor ? decodeCursor(q.cursor) : undefined },
      publicationStatus,
    );
    const last = rows.at(-1);
    respond(res, ConversationListResponse, {
      conversations: rows,
      cursor: rows.length === q.limit && last ? encodeCursor(last) : null,
    });
  });

  // A transcript page is the heaviest read a Player can ask for (up to PAGE_MAX_BYTES and one long Message):
  // rationed per Player across instances. Scrolling back reads a page a few seconds at the most.
  const pages = keyedRateLimit(
    120,
    'Too many transcript pages at once: at most 120 a minute. Try again shortly.',
    playerKey,
    { sql, name: 'pages' },
  );

  router.get('/conversations/:id', pages, async (req, res) => {
    const player = currentPlayer(res);
    const conversation = await owned(player.id, req.params.id);
    const q = parseQuery(req, MessagesQuery);
    const [participants, page] = await Promise.all([
      getParticipants(sql, conversation.id),
      listMessages(sql, conversation.id, { limit: q.limit, maxBytes: q.maxBytes }),
    ]);
    respond(res, ConversationPage, { conversation, participants, ...page });
  });

  router.get('/conversations/:id/messages', pages, async (req, res) => {
    const player = currentPlayer(res);
    const conversation = await owned(player.id, req.params.id);
    const q = parseQuery(req, MessagesQuery);
    respond(
      res,
      MessagePage,
      await listMessages(sql, conversation.id, { limit: q.limit, before: q.before, maxBytes: q.maxBytes }),
    );
  });

  router.patch('/conversations/:id', async (req, res) => {
    const player = currentPlayer(res);
    const body = parseBody(req, RenameBody);
    if (body.title === undefined && body.replyMode === undefined)
      throw new AppError('INVALID_BODY', 'Send a title, a replyMode, or both.');
    const id = req.params.id;
    if (
      !isUuid(id) ||
      (body.title !== undefined && !(await renameConversation(sql, player.id, id, body.title))) ||
      (body.replyMode !== undefined && !(await setReplyMode(sql, player.id, id, body.replyMode)))
    ) {
      throw notFound('Conversation');
    }
    const conversation = await getConversation(sql, player.id, req.params.id);
    // Deleted between the rename and this read.
    if (!conversation) throw notFound('Conversation');
    respond(res, ConversationResponse, { conversation });
  });

  // Search is work for PostgreSQL: rationed per Player (a search box asks as the Player types, after a pause).
  const searches = keyedRateLimit(120, 'Too many searches at once: at most 120 a minute.', playerKey, {
    sql,
    name: 'searches',
  });

  // Shows another branch of the Conversation: the path through the chosen Message (ADR 0042).
  router.post('/conversations/:id/branch', async (req, res) => {
    const player = currentPlayer(res);
    const conversation = await owned(player.id, req.params.id);
    const { messageId } = parseBody(req, BranchBody);
    // Before the path moves, so no live append that sees the new path sees the old window (ADR 0046).
    await pathMoved?.(conversation.id);
    await switchBranch(sql, player.id, conversation.id, messageId);
    res.status(204).end();
  });

  router.get('/search', searches, async (req, res) => {
    const player = currentPlayer(res);
    const q = parseQuery(req, SearchQuery);
    respond(res, SearchResponse, { results: await searchMessages(sql, player.id, q.q, q.limit) });
  });

  router.get('/usage', async (req, res) => {
    const player = currentPlayer(res);
    const q = parseQuery(req, UsageQuery);
    const [byDay, storage] = await Promise.all([
      usageByDay(sql, player.id, q.by, q.days),
      storageUse(sql, player.id),
    ]);
    respond(res, UsageResponse, { ...byDay, storage });
  });

  router.delete('/conversations/:id', async (req, res) => {
    const player = currentPlayer(res);
    if (!isUuid(req.params.id) || !(await deleteConversation(sql, player.id, req.params.id))) {
      throw notFound('Conversation');
    }
    // Its sandbox's files go with it.
    await removeSandbox(dataDir, req.params.id);
    res.status(204).end();
  });

  return router;
}
