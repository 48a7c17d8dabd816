import { type Request, type RequestHandler, type Response, Router } from 'express';
import { z } from 'zod';
import { adoptBlob, collectBlobs, readBlobBytes, writeBlob } from '../attachments/index.ts';
import { currentPlayer, playerKey } from '../auth/index.ts';
import type { Sql } from '../db/index.ts';
import { transaction } from '../db/index.ts';
import {
  AppError,
  bodyValue,
  inFlightLimit,
  isUuid,
  keyedRateLimit,
  notFound,
  parseBody,
  parseQuery,
  readBytes,
  respond,
} from '../http/index.ts';
import { checkJsonLimits } from '../json/index.ts';
import { wellFormed } from '../parts/index.ts';
import { FairSlots, slotOf, takeSlot } from '../slots/index.ts';
import {
  avatarBlobIds,
  createNpc,
  getNpc,
  getVillageSettings,
  listNpcs,
  type ProviderRegistry,
  replaceAvatar,
  updateNpc,
} from '../village/index.ts';
import { ImportedLorebookResponse, ImportedNpcResponse, LorebookListResponse } from '../wire/index.ts';
import {
  CARD_LIMITS,
  CardError,
  cardError,
  cardJsonReader,
  fromJson,
  type ImportedCard,
  readCardJson,
  readCardValue,
  toCardV2,
  toCardV3,
} from './card.ts';
import { isWorldInfo, type Lorebook, LorebookError, readBook, worldInfoToBook } from './lorebook.ts';
import { isPng, pngWithoutText, pngWithText, withText } from './png.ts';
import { attachBooks, embeddedBook, insertLorebook, listLorebooks, setEmbeddedBook } from './store.ts';

const MAX_CARD_BYTES = 10 * 1024 * 1024;
/** The longest a card import may take once its file has arrived. */
const CARD_DEADLINE_MS = 60_000;
const CardQuery = z.object({
  format: z.enum(['json', 'png']).default('json'),
  spec: z.enum(['v2', 'v3']).default('v2'),
});
const ImportQuery = z.object({
  /** The NPC to update with the card (what a 409 CARD_ALREADY_IMPORTED offers). */
  update: z.uuid().optional(),
  /** Make a second NPC of a card already imported. */
  duplicate: z.enum(['true', 'false']).optional(),
  /** A lorebook's name when the file has none (a World Info file is named after its file). */
  name: z.string().max(200).optional(),
});
const AttachBody = z.object({ lorebookIds: z.array(z.uuid()).max(8) }).strict();

/**
 * A PNG card's picture as the NPC's avatar: the PNG without its text chunks, stored as a blob (once per content)
 * and the one it replaces let go. A picture that cannot be read is no reason to refuse the card: it says so.
 */
async function keepAvatar(sql: Sql, npcId: string, bytes: unknown, notes: string[]): Promise<void> {
  if (!Buffer.isBuffer(bytes) || !isPng(bytes)) return;
  let picture: Uint8Array;
  try {
    picture = pngWithoutText(bytes);
  } catch {
    notes.push("The card's picture could not be read: the NPC has no avatar.");
    return;
  }
  const written = await writeBlob(
    sql,
    (async function* () {
      yield picture;
    })(),
    MAX_CARD_BYTES,
  );
  const old = await adoptBlob(sql, written, (tx, blobId) => replaceAvatar(tx, npcId, blobId));
  if (old) await collectBlobs(sql, [old]).catch(() => {});
}

const avatarOf = async (sql: Sql, npcId: string) => (await avatarBlobIds(sql, [npcId])).get(npcId) ?? null;

const asAppError = (e: unknown) =>
  e instanceof CardError ? new AppError(e.code, e.message, { cause: e }) : e;

async function jsonOf(req: Request): Promise<unknown> {
  const read = bodyValue(req);
  if (read) return read.value;
  const body: unknown = req.body;
  if (Buffer.isBuffer(body) && body.length > 0) return readCardJson(body);
  if (req.is('application/json') && body !== undefined) {
    // Parsed by the JSON body reader, not bounded as it was read: held to the same limits (a nesting of 200,000
    // arrays overflowed the stack of the walk after it).
    try {
      checkJsonLimits(body, CARD_LIMITS, 'The file');
    } catch (e) {
      throw cardError(e);
    }
    return body;
  }
  if (Buffer.isBuffer(body) && body.length === 0)
    throw new AppError(
      'CARD_EMPTY',
      'That file is empty (0 bytes), so there is no character in it. Save or download the card again, then import the new file.',
    );
  throw new AppError(
    'INVALID_BODY',
    'No card file arrived. Choose a character card (a .png or .json file, as SillyTavern exports them) and import it again.',
  );
}

async function cardOf(req: Request): Promise<ImportedCard> {
  try {
    const body: unknown = req.body;
    if (!Buffer.isBuffer(body) && req.is('application/json') && body !== undefined)
      return readCardValue(body);
    return fromJson(await jsonOf(req));
  } catch (e) {
    throw asAppError(e);
  }
}

type Deps = { sql: Sql; providers: ProviderRegistry };

/**
 * Character cards and lorebooks: `POST /api/npcs/import` makes an NPC of a card (V1, V2 or V3; PNG or JSON), its
 * lorebook the NPC's own; the same card again is refused with 409 and the NPC it would update (`?update=<id>`).
 * `GET /api/npcs/:id/card` gives an NPC back as a V2 or V3 card (JSON, or PNG with both chunks). World Info files
 * import as lorebooks (`POST /api/lorebooks/import`) attached to NPCs with `PUT /api/npcs/:id/lorebooks`.
 * Mounted behind requireSession.
 */
export function cardRoutes(deps: Deps): Router {
  const router = Router();
  const { importing, tooSlow } = importLimits(deps.sql);
  router.post('/npcs/import', ...importing, importCard(deps, tooSlow));
  router.get('/npcs/:id/card', exportCard(deps));
  router.get('/npcs/:id/avatar', sendAvatar(deps));
  router.post('/lorebooks/import', ...importing, importLorebook(deps, tooSlow));
  router.get('/lorebooks', async (_req, res) => {
    respond(res, LorebookListResponse, { lorebooks: await listLorebooks(deps.sql, currentPlayer(res).id) });
  });
  router.put('/npcs/:id/lorebooks', attachLorebooks(deps));
  return router;
}

type TooSlow = (res: Response) => void;

/** What an import goes through before its handler: a rate, a connection limit, the bytes read bounded, a slot. */
function importLimits(sql: Sql): { importing: RequestHandler[]; tooSlow: TooSlow } {
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
  return {
    importing: [
      rationed,
      sendingCards,
      readBytes(MAX_CARD_BYTES, cardJsonReader, (e) => asAppError(cardError(e))),
      takeSlot(cardSlots, playerKey),
    ],
    tooSlow: (res) => {
      if (slotOf(res).signal.aborted)
        throw new AppError(
          'IMPORT_TOO_SLOW',
          `The file took longer than ${CARD_DEADLINE_MS / 1000} s to read and was stopped. Nothing was stored.`,
        );
    },
  };
}

/** An NPC made (or, with `?update=`, updated) from a card. */
const importCard =
  ({ sql, providers }: Deps, tooSlow: TooSlow) =>
  async (req: Request, res: Response) => {
    const player = currentPlayer(res);
    const q = parseQuery(req, ImportQuery);
    const card = await cardOf(req);
    tooSlow(res);
    const notes = [...card.notes];
    let { provider, model } = card.npc;
    if (provider && !providers.has(provider)) {
      notes.push(
        `The card asks for the Provider "${provider}", which this Village does not offer: the NPC uses the default.`,
      );
      provider = null;
      model = null;
    }
    const fields = { ...card.npc, provider, model };
    const saveBook = (npcId: string) => async (tx: Parameters<typeof setEmbeddedBook>[0]) =>
      setEmbeddedBook(tx, player.id, npcId, card.lorebook);
    const entries = card.lorebook?.entries.length ?? 0;
    if (q.update) {
      const npc = await updateNpc(sql, player.id, q.update, fields, (tx, n) => saveBook(n.id)(tx));
      if (!npc) throw notFound('NPC');
      await keepAvatar(sql, npc.id, req.body, notes);
      const shown = (await getNpc(sql, player.id, npc.id)) ?? npc;
      respond(res, ImportedNpcResponse, { npc: shown, lorebookEntries: entries, notes, updated: true });
      return;
    }
    // The same card again (same name, same creator): offered as an update, not made twice.
    const same = (await listNpcs(sql, player.id)).find(
      (n) => n.name === fields.name && n.creator === fields.creator,
    );
    if (same && q.duplicate !== 'true')
      throw new AppError(
        'CARD_ALREADY_IMPORTED',
        `You already have ${same.name} from this card. Update that NPC with it, or import it as a second NPC.`,
        {
          details: {
            npcId: same.id,
            update: `/api/npcs/import?update=${same.id}`,
            duplicate: '/api/npcs/import?duplicate=true',
          },
        },
      );
    const { maxNpcs } = await getVillageSettings(sql);
    const npc = await createNpc(sql, player.id, fields, maxNpcs, (tx, created) => saveBook(created.id)(tx));
    await keepAvatar(sql, npc.id, req.body, notes);
    const shown = (await getNpc(sql, player.id, npc.id)) ?? npc;
    respond(res, ImportedNpcResponse, { npc: shown, lorebookEntries: entries, notes, updated: false }, 201);
  };

/** An NPC as a V2 or V3 card: JSON, or PNG with both chunks. */
const exportCard =
  ({ sql }: Deps) =>
  async (req: Request, res: Response) => {
    const player = currentPlayer(res);
    const { format, spec } = parseQuery(req, CardQuery);
    const npc = isUuid(req.params.id) ? await getNpc(sql, player.id, req.params.id) : undefined;
    if (!npc) throw notFound('NPC');
    const book = await embeddedBook(sql, npc.id);
    const v2 = JSON.stringify(toCardV2(npc, book));
    const v3 = JSON.stringify(toCardV3(npc, book));
    if (format === 'png') {
      // Both chunks, as SillyTavern writes them: V2 readers take `chara`, V3 readers `ccv3`.
      const b64 = (s: string) => Buffer.from(s).toString('base64');
      const texts = { chara: b64(v2), ccv3: b64(v3) };
      // The NPC's own picture when it has one (a card's PNG gives its picture back), else a 1×1 one.
      const avatar = await avatarOf(sql, npc.id);
      const png = avatar
        ? withText(await readBlobBytes(sql, avatar, MAX_CARD_BYTES), texts)
        : pngWithText(texts);
      res.attachment(`${npc.name}.png`).type('image/png');
      res.send(Buffer.from(png));
    } else {
      res
        .attachment(`${npc.name}.json`)
        .type('application/json')
        .send(spec === 'v3' ? v3 : v2);
    }
  };

const sendAvatar =
  ({ sql }: Deps) =>
  async (req: Request, res: Response) => {
    const player = currentPlayer(res);
    const npc = isUuid(req.params.id) ? await getNpc(sql, player.id, req.params.id) : undefined;
    const avatar = npc && (await avatarOf(sql, npc.id));
    if (!avatar) throw notFound('Avatar');
    // The URL names the content (`?v=`): it may be kept as long as the browser likes.
    res
      .type('image/png')
      .set('cache-control', 'private, max-age=31536000, immutable')
      .set('content-security-policy', "default-src 'none'")
      .send(await readBlobBytes(sql, avatar, MAX_CARD_BYTES));
  };

/** A World Info file (or a card's character_book) as a lorebook of the Player's, attached to no NPC yet. */
const importLorebook =
  ({ sql }: Deps, tooSlow: TooSlow) =>
  async (req: Request, res: Response) => {
    const player = currentPlayer(res);
    const q = parseQuery(req, ImportQuery);
    let raw: unknown;
    try {
      raw = wellFormed(await jsonOf(req));
    } catch (e) {
      throw asAppError(e);
    }
    tooSlow(res);
    const named = lorebookOf(raw, q.name?.trim() || 'Lorebook');
    const id = await transaction(sql, (tx) => insertLorebook(tx, player.id, named)).catch((e) => {
      if ((e as Error).message === 'TOO_MANY_LOREBOOKS')
        throw new AppError('TOO_MANY_LOREBOOKS', 'You have 500 lorebooks. Delete one to import another.');
      throw e;
    });
    const lorebook = {
      id,
      name: String(named.name),
      entries: named.entries.length,
      npcIds: [],
      embedded: false,
    };
    respond(res, ImportedLorebookResponse, { lorebook }, 201);
  };

/** The book in an imported file, named (its own name, else `name`); refused when it is none or too large. */
function lorebookOf(raw: unknown, name: string): Lorebook {
  let book: ReturnType<typeof readBook>;
  try {
    book = isWorldInfo(raw) ? worldInfoToBook(raw, name) : readBook(raw);
  } catch (e) {
    if (e instanceof LorebookError) throw new AppError('LOREBOOK_TOO_LARGE', e.message);
    throw e;
  }
  if (!book || book.entries.length === 0)
    throw new AppError(
      'NOT_A_LOREBOOK',
      'This is not a lorebook: expected a World Info file or a character_book with entries.',
    );
  return typeof book.name === 'string' && book.name ? book : { ...book, name };
}

const attachLorebooks =
  ({ sql }: Deps) =>
  async (req: Request, res: Response) => {
    const player = currentPlayer(res);
    const body = parseBody(req, AttachBody);
    const npc = isUuid(req.params.id) ? await getNpc(sql, player.id, req.params.id) : undefined;
    if (!npc) throw notFound('NPC');
    const ok = await transaction(sql, (tx) => attachBooks(tx, player.id, npc.id, body.lorebookIds));
    if (!ok)
      throw new AppError('UNKNOWN_LOREBOOK', 'That lorebook is not one of yours (or is a card’s own).');
    respond(res, LorebookListResponse, { lorebooks: await listLorebooks(sql, player.id) });
  };
