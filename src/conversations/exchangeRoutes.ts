import { randomUUID } from 'node:crypto';
import { type Request, type Response, Router } from 'express';
import { z } from 'zod';
import { currentPlayer, playerKey } from '../auth/index.ts';
import { embeddedBook, type Lorebook, LorebookError, readBook, setEmbeddedBook } from '../cards/index.ts';
import { type Queryable, type Sql, transaction } from '../db/index.ts';
import {
  AppError,
  bodyValue,
  inFlightLimit,
  invalidBody,
  isUuid,
  keyedRateLimit,
  notFound,
  parseQuery,
  readBytes,
  respond,
} from '../http/index.ts';
import {
  BoundedJsonReader,
  checkJsonLimits,
  JsonLimitError,
  type JsonLimits,
  parseBoundedJson,
} from '../json/index.ts';
import { wellFormed } from '../parts/index.ts';
import { FairSlots, slotOf, takeSlot } from '../slots/index.ts';
import { withMessagesCountedAtEnd } from '../storage/index.ts';
import {
  getVillageSettings,
  insertNpc,
  listNpcs,
  type Npc,
  type ProviderRegistry,
} from '../village/index.ts';
import { ConversationImported } from '../wire/index.ts';
import {
  ConversationExport,
  EXPORT_FORMAT,
  EXPORT_VERSION,
  type ExportedNpc,
  exportMessage,
  importedRow,
  importedTree,
  markdownHead,
  markdownMessage,
} from './exchange.ts';
import { getConversation, getParticipants, insertConversation, messagesAfter } from './store.ts';

const MAX_IMPORT_BYTES = 20 * 1024 * 1024;
const PAGE = 200;
/** The longest an export may take, however slowly it is read: a 20 MB file at 64 KB/s is five minutes. */
const EXPORT_DEADLINE_MS = 10 * 60_000;
/** The longest an import may take once its file has arrived: parsing and storing 50,000 Messages is seconds. */
const IMPORT_DEADLINE_MS = 2 * 60_000;
const ExportQuery = z.object({ format: z.enum(['json', 'md']).default('json') });

/** An NPC as the file carries it: its fields, card fields and own lorebook (not its grants, id or avatar). */
async function npcOf(sql: Sql, n: Npc): Promise<ExportedNpc> {
  const { id: _id, playerId: _p, avatarUrl: _a, createdAt: _c, updatedAt: _u, ...fields } = n;
  return { ...fields, lorebook: await embeddedBook(sql, n.id) };
}

/** The card fields a file compares from version 3 on (earlier files have none, so an NPC is matched without). */
const CARD_KEYS = [
  'personality',
  'scenario',
  'greeting',
  'alternateGreetings',
  'exampleMessages',
  'postHistoryInstructions',
  'creator',
  'creatorNotes',
  'characterVersion',
  'tags',
] as const;

/** Whether the Player's NPC is the file's character: same name, Job Title, description, prompt (and card). */
const sameCharacter = (m: Npc, n: ExportedNpc, version: number) =>
  m.name === n.name &&
  m.jobTitle === n.jobTitle &&
  m.description === n.description &&
  m.prompt === n.prompt &&
  (version < 3 || CARD_KEYS.every((k) => JSON.stringify(m[k]) === JSON.stringify(n[k])));

/** The file's NPC made for the Player, with its own lorebook, in the import's transaction. */
async function makeNpc(
  tx: Queryable,
  playerId: string,
  n: ExportedNpc,
  usable: boolean,
  max: number,
): Promise<Npc> {
  const { lorebook, ...fields } = n;
  let book: Lorebook | null;
  try {
    book = readBook(lorebook);
  } catch (e) {
    if (e instanceof LorebookError) throw new AppError('LOREBOOK_TOO_LARGE', e.message);
    throw e;
  }
  const npc = await insertNpc(
    tx,
    playerId,
    { ...fields, provider: usable ? n.provider : null, model: usable ? n.model : null },
    max,
  );
  if (book) await setEmbeddedBook(tx, playerId, npc.id, book);
  return npc;
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

/**
 * Export (`GET …/export?format=json|md`) and import (`POST /api/conversations/import`) of whole Conversations.
 * Exports stream page by page (no connection held between pages); imports are one transaction.
 */
export function exchangeRoutes({ sql, providers }: { sql: Sql; providers: ProviderRegistry }): Router {
  const router = Router();
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

  router.get(
    '/conversations/:id/export',
    rationed('exports'),
    takeSlot(exportSlots, playerKey),
    async (req, res) => {
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
      let after = '0';
      let first = true;
      // At the slot's deadline the export is cut, however slowly it is being read, and the slot goes to the next.
      const { signal } = slotOf(res);
      const cut = () => res.destroy();
      signal.addEventListener('abort', cut, { once: true });
      res.once('close', () => signal.removeEventListener('abort', cut));
      try {
        for (;;) {
          const rows = await messagesAfter(sql, conversation.id, after, PAGE);
          for (const m of rows) {
            if (format === 'json') {
              // Every branch: the tree is part of the Conversation.
              await write(res, `${first ? '' : ','}${JSON.stringify(exportMessage(m, npcIndex))}`);
              first = false;
            } else if (m.onPath) await write(res, `\n${markdownMessage(m)}`);
          }
          if (rows.length < PAGE) break;
          after = rows.at(-1)!.seq;
        }
        res.end(format === 'json' ? ']}' : '');
      } catch {
        // Mid-file the status is sent: a cut connection is the only honest answer, so the file is not taken as whole.
        res.destroy();
      }
    },
  );

  router.post(
    '/conversations/import',
    rationed('imports'),
    sendingImports,
    readBytes(MAX_IMPORT_BYTES, () => new BoundedJsonReader(IMPORT_LIMITS, 'The file'), importError),
    takeSlot(importSlots, playerKey),
    async (req, res) => {
      const player = currentPlayer(res);
      const { signal } = slotOf(res);
      // Past its deadline an import stops where it is; inside the transaction, that rolls everything back.
      const inTime = () => {
        if (signal.aborted)
          throw new AppError(
            'IMPORT_TOO_SLOW',
            `The import took longer than ${IMPORT_DEADLINE_MS / 60_000} minutes and was stopped. Nothing was stored.`,
          );
      };
      const file = await parseExport(req);
      inTime();
      const tree = importedTree(file.messages);
      if (typeof tree === 'string')
        throw new AppError('INVALID_BODY', `The request body is not valid: ${tree}.`);
      const settings = await getVillageSettings(sql);
      // Each NPC of the file is one of the Player's that is the same character (name, Job Title, description,
      // prompt), or is made from the file's definition: a namesake with another prompt is not silently swapped in.
      // Made in the import's transaction: a refused import leaves no NPC behind.
      const mine = await listNpcs(sql, player.id);
      const ids = file.messages.map(() => randomUUID());
      const created: string[] = [];
      const { conversation, count } = await transaction(sql, async (tx) => {
        const npcIds: string[] = [];
        for (const n of file.npcs) {
          const same = mine.find((m) => sameCharacter(m, n, file.version));
          if (same) {
            npcIds.push(same.id);
            continue;
          }
          const usable = n.provider !== null && providers.has(n.provider);
          const npc = await makeNpc(tx, player.id, n, usable, settings.maxNpcs);
          mine.push(npc);
          npcIds.push(npc.id);
          created.push(npc.name);
        }
        const c = await insertConversation(
          tx,
          player.id,
          [...new Set(npcIds)],
          file.conversation.title,
          settings.maxConversations,
        );
        const rows = file.messages.map((m, i) =>
          importedRow(m, npcIds, randomUUID, {
            id: ids[i]!,
            parentId: tree.parents[i] === null ? null : ids[tree.parents[i]!]!,
            onPath: tree.onPath[i]!,
          }),
        );
        await tx`update conversations set created_at = ${new Date(file.conversation.createdAt)} where id = ${c.id}`;
        // Counted with everything else the Player stores, once, at the end (ADR 0053): past the quota, nothing of
        // it is kept.
        await withMessagesCountedAtEnd(tx, player.id, c.id, async () => {
          for (let i = 0; i < rows.length; i += 1000) {
            inTime();
            const chunk = rows
              .slice(i, i + 1000)
              .map((r) => ({ ...r, conversation_id: c.id, parts: tx.json(r.parts as never) }));
            await tx`insert into messages ${tx(chunk)}`;
          }
        });
        return { conversation: c, count: rows.length };
      });
      const participants = await getParticipants(sql, conversation.id);
      respond(
        res,
        ConversationImported,
        { conversation, participants, messages: count, createdNpcs: created },
        201,
      );
    },
  );

  return router;
}

/**
 * What an import file may hold, counted while it is read (ADR 0049): as many Messages as the schema takes, no
 * string longer than a reply may be, no deeper than a tool's input goes; 2 million values is more than 50,000
 * Messages with their Parts need and about 100 MB of heap at most.
 */
const IMPORT_LIMITS: JsonLimits = { nodes: 2_000_000, depth: 256, items: 50_000, chars: 1_000_000 };

function importError(e: unknown): unknown {
  if (!(e instanceof JsonLimitError)) return e;
  // Not JSON, or nested too deep, is a malformed body (as it always was); too much of it has its own code.
  if (e.status === 400)
    return new AppError(
      'INVALID_BODY',
      e.code === 'INVALID_JSON' ? `${e.message} Import takes the JSON export, not the Markdown.` : e.message,
    );
  // Too much of it (what is left once malformed is answered above) has its own code.
  return new AppError(e.code === 'JSON_TEXT_TOO_LONG' ? e.code : 'JSON_TOO_MANY_VALUES', e.message);
}

async function parseExport(req: Request): Promise<ConversationExport> {
  const read = bodyValue(req);
  let json: unknown = read ? read.value : req.body;
  try {
    if (!read && Buffer.isBuffer(req.body)) {
      if (req.body.length === 0)
        throw new AppError(
          'EXPORT_EMPTY',
          'That file is empty (0 bytes), so there is no Conversation in it. Export the Conversation again ("Export JSON" on its page), then import the new file.',
        );
      json = await parseBoundedJson(req.body, IMPORT_LIMITS, 'The file');
    } else if (!read) checkJsonLimits(json, IMPORT_LIMITS, 'The file');
  } catch (e) {
    throw importError(e);
  }
  const parsed = ConversationExport.safeParse(json);
  if (!parsed.success) throw invalidBody(parsed.error);
  // Storable text, as every turn's is: NUL and half surrogate pairs become U+FFFD (jsonb refuses them).
  return wellFormed(parsed.data);
}
