// The import of a whole Conversation from a file (POST /api/conversations/import): read bounded while it arrives
// (ADR 0049), its NPCs matched or made and its Messages stored in one transaction.
import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import { currentPlayer } from '../auth/index.ts';
import { type Lorebook, LorebookError, readBook, setEmbeddedBook } from '../cards/index.ts';
import { type Queryable, type Sql, transaction } from '../db/index.ts';
import { AppError, bodyValue, invalidBody, respond } from '../http/index.ts';
import { checkJsonLimits, JsonLimitError, type JsonLimits, parseBoundedJson } from '../json/index.ts';
import { wellFormed } from '../parts/index.ts';
import { slotOf } from '../slots/index.ts';
import { withMessagesCountedAtEnd } from '../storage/index.ts';
import {
  getVillageSettings,
  insertNpc,
  listNpcs,
  type Npc,
  type ProviderRegistry,
} from '../village/index.ts';
import { ConversationImported } from '../wire/index.ts';
import { ConversationExport, type ExportedNpc, importedRow, importedTree } from './exchange.ts';
import { getParticipants, insertConversation } from './store.ts';

/** The longest an import may take once its file has arrived: parsing and storing 50,000 Messages is seconds. */
export const IMPORT_DEADLINE_MS = 2 * 60_000;
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

/** A file exported here (or shaped like one) as a new Conversation of the Player's, in one transaction. */
type Deps = { sql: Sql; providers: ProviderRegistry };

export const importConversation =
  ({ sql, providers }: Deps) =>
  async (req: Request, res: Response) => {
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
    const mine = await listNpcs(sql, player.id);
    const { conversation, count, created } = await transaction(sql, async (tx) => {
      const { npcIds, created } = await npcsOf(tx, player.id, file, mine, providers, settings.maxNpcs);
      const c = await insertConversation(
        tx,
        player.id,
        [...new Set(npcIds)],
        file.conversation.title,
        settings.maxConversations,
      );
      const count = await storeMessages(tx, player.id, c.id, file, tree, npcIds, inTime);
      return { conversation: c, count, created };
    });
    const participants = await getParticipants(sql, conversation.id);
    respond(
      res,
      ConversationImported,
      { conversation, participants, messages: count, createdNpcs: created },
      201,
    );
  };

/**
 * Each NPC of the file is one of the Player's that is the same character (name, Job Title, description, prompt),
 * or is made from the file's definition: a namesake with another prompt is not silently swapped in. Made in the
 * import's transaction: a refused import leaves no NPC behind.
 */
async function npcsOf(
  tx: Queryable,
  playerId: string,
  file: ConversationExport,
  mine: Npc[],
  providers: ProviderRegistry,
  maxNpcs: number,
): Promise<{ npcIds: string[]; created: string[] }> {
  const npcIds: string[] = [];
  const created: string[] = [];
  for (const n of file.npcs) {
    const same = mine.find((m) => sameCharacter(m, n, file.version));
    if (same) {
      npcIds.push(same.id);
      continue;
    }
    const usable = n.provider !== null && providers.has(n.provider);
    const npc = await makeNpc(tx, playerId, n, usable, maxNpcs);
    mine.push(npc);
    npcIds.push(npc.id);
    created.push(npc.name);
  }
  return { npcIds, created };
}

/** The file's Messages as rows of the new Conversation, its tree kept, counted against the Player's storage. */
async function storeMessages(
  tx: Queryable,
  playerId: string,
  conversationId: string,
  file: ConversationExport,
  tree: Exclude<ReturnType<typeof importedTree>, string>,
  npcIds: string[],
  inTime: () => void,
): Promise<number> {
  const ids = file.messages.map(() => randomUUID());
  const rows = file.messages.map((m, i) =>
    importedRow(m, npcIds, randomUUID, {
      id: ids[i]!,
      parentId: tree.parents[i] === null ? null : ids[tree.parents[i]!]!,
      onPath: tree.onPath[i]!,
    }),
  );
  await tx`update conversations set created_at = ${new Date(file.conversation.createdAt)} where id = ${conversationId}`;
  // Counted with everything else the Player stores, once, at the end (ADR 0053): past the quota, nothing of it is
  // kept.
  const insert = async () => {
    for (let i = 0; i < rows.length; i += 1000) {
      inTime();
      const chunk = rows
        .slice(i, i + 1000)
        .map((r) => ({ ...r, conversation_id: conversationId, parts: tx.json(r.parts as never) }));
      await tx`insert into messages ${tx(chunk)}`;
    }
  };
  await withMessagesCountedAtEnd(
    tx,
    playerId,
    tx`(select coalesce(sum(stored_bytes), 0) from messages where conversation_id = ${conversationId})`,
    insert,
  );
  return rows.length;
}

/**
 * What an import file may hold, counted while it is read (ADR 0049): as many Messages as the schema takes, no
 * string longer than a reply may be, no deeper than a tool's input goes; 2 million values is more than 50,000
 * Messages with their Parts need and about 100 MB of heap at most.
 */
export const IMPORT_LIMITS: JsonLimits = { nodes: 2_000_000, depth: 256, items: 50_000, chars: 1_000_000 };

export function importError(e: unknown): unknown {
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
