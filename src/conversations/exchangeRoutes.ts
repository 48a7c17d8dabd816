import { type Request, type RequestHandler, type Response, Router } from 'express';
import { z } from 'zod';
import { currentPlayer, playerKey } from '../auth/index.ts';
import { embeddedBook } from '../cards/index.ts';
import type { Sql } from '../db/index.ts';
import { inFlightLimit, isUuid, keyedRateLimit, notFound, parseQuery, readBytes } from '../http/index.ts';
import { BoundedJsonReader } from '../json/index.ts';
import { FairSlots, slotOf, takeSlot } from '../slots/index.ts';
import type { Npc, ProviderRegistry } from '../village/index.ts';
import {
  EXPORT_FORMAT,
  EXPORT_VERSION,
  type ExportedNpc,
  exportMessage,
  markdownHead,
  markdownMessage,
} from './exchange.ts';
import { IMPORT_DEADLINE_MS, IMPORT_LIMITS, importConversation, importError } from './importRoute.ts';
import { getConversation, getParticipants, messagesAfter } from './store.ts';

const MAX_IMPORT_BYTES = 20 * 1024 * 1024;
const PAGE = 200;
/** The longest an export may take, however slowly it is read: a 20 MB file at 64 KB/s is five minutes. */
const EXPORT_DEADLINE_MS = 10 * 60_000;
const ExportQuery = z.object({ format: z.enum(['json', 'md']).default('json') });

/** An NPC as the file carries it: its fields, card fields and own lorebook (not its grants, id or avatar). */
async function npcOf(sql: Sql, n: Npc): Promise<ExportedNpc> {
  const { id: _id, playerId: _p, avatarUrl: _a, createdAt: _c, updatedAt: _u, ...fields } = n;
  return { ...fields, lorebook: await embeddedBook(sql, n.id) };
}

/**
 * Writes and waits while the client is behind: a slow reader holds back the export, not the server's memory. A
 * reader that takes nothing for a minute is cut off, so a stalled download holds nothing for ever.
 */
async function write(res: Response, chunk: string) {
  if (!res.write(chunk))
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(stalled);
        res.off('drain', done).off('close', done);
        resolve();
      };
      const stalled = setTimeout(() => {
        res.destroy();
        done();
      }, 60_000);
      res.once('drain', done).once('close', done);
    });
  if (res.destroyed) throw new Error('the client went away');
}

type Deps = { sql: Sql; providers: ProviderRegistry };

/**
 * Export (`GET …/export?format=json|md`) and import (`POST /api/conversations/import`) of whole Conversations.
 * Exports stream page by page (no connection held between pages); imports are one transaction.
 */
export function exchangeRoutes(deps: Deps): Router {
  const router = Router();
  const limits = exchangeLimits(deps.sql);
  router.get('/conversations/:id/export', ...limits.exporting, exportConversation(deps));
  router.post('/conversations/import', ...limits.importing, importConversation(deps));
  return router;
}

/** What an export and an import go through before their handlers: a rate, the bytes read bounded, a fair slot. */
function exchangeLimits(sql: Sql): { exporting: RequestHandler[]; importing: RequestHandler[] } {
  // A file being sent holds little but its connection: two per Player, twelve per instance, none of the slots.
  const sendingImports = inFlightLimit(
    2,
    12,
    'Two imports are already being sent: wait for one to finish.',
    playerKey,
  );
  // An import holds its file, its parse and its rows in memory while it runs: four per instance, one of them a
  // Player's, shared fairly (ADR 0057), taken only once the whole file has arrived.
  const importSlots = new FairSlots({
    capacity: 4,
    perPlayer: 1,
    reserve: 0,
    queuePerPlayer: 1,
    waitMs: 30_000,
    holdMs: IMPORT_DEADLINE_MS,
    messages: {
      queueFull: 'An import is already running: wait for it to finish.',
      busy: 'Many imports are running on this server right now. Try again in a moment.',
    },
  });
  // An export holds a page of rows while its reader takes them, for as long as the reader is slow: two per
  // Player and eight per instance (two kept for Players running none), none longer than EXPORT_DEADLINE_MS.
  const exportSlots = new FairSlots({
    capacity: 8,
    perPlayer: 2,
    reserve: 2,
    queuePerPlayer: 2,
    waitMs: 20_000,
    holdMs: EXPORT_DEADLINE_MS,
    messages: {
      queueFull: 'Two exports are already running: wait for one to finish.',
      busy: 'Many exports are running on this server right now. Try again in a moment.',
    },
  });
  const rationed = (what: string) =>
    keyedRateLimit(30, `Too many ${what} at once: at most 30 a minute.`, playerKey, { sql, name: what });
  return {
    exporting: [rationed('exports'), takeSlot(exportSlots, playerKey)],
    importing: [
      rationed('imports'),
      sendingImports,
      readBytes(MAX_IMPORT_BYTES, () => new BoundedJsonReader(IMPORT_LIMITS, 'The file'), importError),
      takeSlot(importSlots, playerKey),
    ],
  };
}

/** A Conversation as a file: JSON (every branch) or Markdown (the path shown), streamed page by page. */
const exportConversation =
  ({ sql }: Deps) =>
  async (req: Request, res: Response) => {
    const player = currentPlayer(res);
    const { format } = parseQuery(req, ExportQuery);
    const conversation = isUuid(req.params.id)
      ? await getConversation(sql, player.id, req.params.id)
      : undefined;
    if (!conversation) throw notFound('Conversation');
    const participants = await getParticipants(sql, conversation.id);
    const npcs = await Promise.all(participants.map((n) => npcOf(sql, n)));
    const npcIndex = new Map(participants.map((n, i) => [n.id, i]));
    const name =
      (conversation.title ?? 'conversation').replace(/[\\/:*?"<>|\p{Cc}]+/gu, ' ').trim() || 'conversation';
    res
      .attachment(`${name}.${format}`)
      .type(format === 'json' ? 'application/json' : 'text/markdown; charset=utf-8');
    if (format === 'json') {
      const head = {
        format: EXPORT_FORMAT,
        version: EXPORT_VERSION,
        exportedAt: new Date().toISOString(),
        conversation: { title: conversation.title, createdAt: conversation.createdAt.toISOString() },
        npcs,
      };
      await write(res, `${JSON.stringify(head).slice(0, -1)},"messages":[`);
    } else await write(res, markdownHead(conversation.title, npcs));
    // At the slot's deadline the export is cut, however slowly it is being read, and the slot goes to the next.
    const { signal } = slotOf(res);
    const cut = () => res.destroy();
    signal.addEventListener('abort', cut, { once: true });
    res.once('close', () => signal.removeEventListener('abort', cut));
    try {
      await writeMessages(res, sql, conversation.id, format, npcIndex);
      res.end(format === 'json' ? ']}' : '');
    } catch {
      // Mid-file the status is sent: a cut connection is the only honest answer, so the file is not taken as whole.
      res.destroy();
    }
  };

/** The Conversation's Messages, page by page, as the format writes them. */
async function writeMessages(
  res: Response,
  sql: Sql,
  conversationId: string,
  format: 'json' | 'md',
  npcIndex: Map<string, number>,
) {
  let after = '0';
  let first = true;
  for (;;) {
    const rows = await messagesAfter(sql, conversationId, after, PAGE);
    for (const m of rows) {
      if (format === 'json') {
        // Every branch: the tree is part of the Conversation.
        await write(res, `${first ? '' : ','}${JSON.stringify(exportMessage(m, npcIndex))}`);
        first = false;
      } else if (m.onPath) await write(res, `\n${markdownMessage(m)}`);
    }
    if (rows.length < PAGE) return;
    after = rows.at(-1)!.seq;
  }
}
