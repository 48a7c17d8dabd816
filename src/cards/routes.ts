import { type Request, Router } from 'express';
import { z } from 'zod';
import { currentPlayer, playerKey } from '../auth/index.ts';
import type { Sql } from '../db/index.ts';
import {
  AppError,
  inFlightLimit,
  isUuid,
  keyedRateLimit,
  notFound,
  parseQuery,
  readBytes,
  respond,
} from '../http/index.ts';
import { FairSlots, slotOf, takeSlot } from '../slots/index.ts';
import { addMemories } from '../tools/index.ts';
import { createNpc, getNpc, getVillageSettings, type ProviderRegistry } from '../village/index.ts';
import { ImportedNpcResponse } from '../wire/index.ts';
import { CardError, type ImportedCard, readCard, readCardValue, toCardV2 } from './card.ts';
import { pngWithText } from './png.ts';

const MAX_CARD_BYTES = 10 * 1024 * 1024;
/** The longest a card import may take once its file has arrived. */
const CARD_DEADLINE_MS = 60_000;
const CardQuery = z.object({ format: z.enum(['json', 'png']).default('json') });

const STATUS = { CARD_TOO_LONG: 422, CARD_TOO_LARGE: 413, CARD_UNREADABLE: 400, NOT_A_CARD: 400 } as const;

async function cardOf(req: Request): Promise<ImportedCard> {
  const body: unknown = req.body;
  try {
    if (Buffer.isBuffer(body) && body.length > 0) return await readCard(body);
    if (req.is('application/json') && body !== undefined) return readCardValue(body);
  } catch (e) {
    if (e instanceof CardError) throw new AppError(STATUS[e.code], e.code, e.message);
    throw e;
  }
  if (Buffer.isBuffer(body) && body.length === 0)
    throw new AppError(
      400,
      'CARD_EMPTY',
      'That file is empty (0 bytes), so there is no character in it. Save or download the card again, then import the new file.',
    );
  throw new AppError(
    400,
    'INVALID_BODY',
    'No card file arrived. Choose a character card (a .png or .json file, as SillyTavern exports them) and import it again.',
  );
}

/**
 * Character cards: `POST /api/npcs/import` makes an NPC of a card (V1, V2 or V3; PNG or JSON) with its lorebook
 * as Memory; `GET /api/npcs/:id/card` gives an NPC back as a V2 card. Mounted behind requireSession.
 */
export function cardRoutes({ sql, providers }: { sql: Sql; providers: ProviderRegistry }): Router {
  const router = Router();
  // A card being sent holds little but its connection: two per Player, twelve per instance, none of the slots.
  const sendingCards = inFlightLimit(
    2,
    12,
    'Two cards are already being sent: wait for one to finish.',
    playerKey,
  );
  // A card import holds its file, its parse and its rows in memory while it runs: four per instance, one of them
  // a Player's, shared fairly (ADR 0057), taken only once the whole file has arrived.
  const cardSlots = new FairSlots({
    capacity: 4,
    perPlayer: 1,
    reserve: 0,
    queuePerPlayer: 1,
    waitMs: 30_000,
    holdMs: CARD_DEADLINE_MS,
    messages: {
      queueFull: 'An import is already running: wait for it to finish.',
      busy: 'Many imports are running on this server right now. Try again in a moment.',
    },
  });
  const rationed = keyedRateLimit(30, 'Too many imports at once: at most 30 a minute.', playerKey, {
    sql,
    name: 'card-imports',
  });

  router.post(
    '/npcs/import',
    rationed,
    sendingCards,
    readBytes(MAX_CARD_BYTES),
    takeSlot(cardSlots, playerKey),
    async (req, res) => {
      const player = currentPlayer(res);
      const card = await cardOf(req);
      if (slotOf(res).signal.aborted)
        throw new AppError(
          503,
          'IMPORT_TOO_SLOW',
          `The card took longer than ${CARD_DEADLINE_MS / 1000} s to read and was stopped. Nothing was stored.`,
        );
      const notes = [...card.notes];
      let { provider, model } = card.npc;
      if (provider && !providers.has(provider)) {
        notes.push(
          `The card asks for the Provider "${provider}", which this Village does not offer: the NPC uses the default.`,
        );
        provider = null;
        model = null;
      }
      const { maxNpcs } = await getVillageSettings(sql);
      const npc = await createNpc(
        sql,
        player.id,
        { ...card.npc, provider, model, grants: card.lorebook.length ? [{ kind: 'memory' }] : undefined },
        maxNpcs,
        async (tx, created) => {
          if (!card.lorebook.length) return;
          // In order (the lorebook keeps it when exported again), within the Player's Memory limit.
          await addMemories(tx, player.id, card.lorebook, { npcName: created.name, lorebookOf: created.id });
        },
      );
      respond(res, ImportedNpcResponse, { npc, lorebookEntries: card.lorebook.length, notes }, 201);
    },
  );

  router.get('/npcs/:id/card', async (req, res) => {
    const player = currentPlayer(res);
    const { format } = parseQuery(req, CardQuery);
    const npc = isUuid(req.params.id) ? await getNpc(sql, player.id, req.params.id) : undefined;
    if (!npc) throw notFound('NPC');
    const lorebook = (
      await sql<
        { text: string }[]
      >`select text from memories where lorebook_of = ${npc.id} order by created_at, id`
    ).map((r) => r.text);
    const card = JSON.stringify(toCardV2(npc, lorebook));
    if (format === 'png') {
      res.attachment(`${npc.name}.png`).type('image/png');
      res.send(Buffer.from(pngWithText({ chara: Buffer.from(card).toString('base64') })));
    } else {
      res.attachment(`${npc.name}.json`).type('application/json').send(card);
    }
  });

  return router;
}
