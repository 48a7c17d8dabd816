import { type Request, Router } from 'express';
import { z } from 'zod';
import { currentPlayer } from '../auth/index.ts';
import type { Sql } from '../db/index.ts';
import {
  AppError,
  bodyValue,
  invalidBody,
  isUuid,
  notFound,
  parseBody,
  readBytes,
  respond,
} from '../http/index.ts';
import { BoundedJsonReader, checkJsonLimits, JsonLimitError, parseBoundedJson } from '../json/index.ts';
import { wellFormed } from '../parts/index.ts';
import { getNpc } from '../village/index.ts';
import { LorebookProblemsResponse, NpcLorebooksResponse } from '../wire/index.ts';
import { CARD_LIMITS } from './card.ts';
import { keyProblem } from './keys.ts';
import { LOREBOOK_LIMITS, type Lorebook, LorebookError, readBook, regexKeysOf } from './lorebook.ts';
import { deleteLorebook, npcLorebooks, replaceLorebook } from './store.ts';

/** A whole book, as the editor sends it back; bounded while it is read, then by readBook (LOREBOOK_LIMITS). */
const BookBody = z.object({ book: z.record(z.string(), z.unknown()) }).strict();

/**
 * A saved book may be as large as an imported one (readBook's 2,000,000 characters of JSON), past the API's 1 MB
 * JSON body: sent as application/octet-stream it is parsed as it arrives, held to the import's JSON limits
 * (CARD_LIMITS) and refused at the first value past them. Its bytes: at most 3 UTF-8 bytes a UTF-16 unit, and the
 * `{"book":…}` around it.
 */
const MAX_BOOK_BYTES = 3 * LOREBOOK_LIMITS.bytes + 64 * 1024;
const bookReader = () => new BoundedJsonReader(CARD_LIMITS, 'The lorebook');
const bookRefused = (e: unknown) =>
  e instanceof JsonLimitError
    ? new AppError(e.status === 413 ? 'LOREBOOK_TOO_LARGE' : 'INVALID_BODY', e.message, { cause: e })
    : e;

/** The `{book}` a save sent: a JSON body (up to 1 MB, read by the app), or bytes read by `bookReader`. */
async function bookBody(req: Request): Promise<z.infer<typeof BookBody>> {
  if (req.is('application/json')) {
    // Parsed by the JSON body reader: held to the limits the bytes are read with before anything walks it.
    try {
      checkJsonLimits(req.body, CARD_LIMITS, 'The lorebook');
    } catch (e) {
      throw bookRefused(e);
    }
    return parseBody(req, BookBody);
  }
  let value = bodyValue(req)?.value;
  // A compressed or empty body was read whole (readBytes): parsed the same way.
  if (value === undefined && Buffer.isBuffer(req.body))
    value = await parseBoundedJson(req.body, CARD_LIMITS, 'The lorebook').catch((e: unknown) => {
      throw bookRefused(e);
    });
  const parsed = BookBody.safeParse(value);
  if (!parsed.success) throw invalidBody(parsed.error);
  return parsed.data;
}

/**
 * The keys of a book that never match, in words (a regex RE2 refuses, or too long a pattern). Only the first
 * LOREBOOK_LIMITS.regexKeys regex keys are checked: a book stored before that bound may hold many more, and each is
 * compiled; the rest are said to be past it.
 */
function problemsOf(book: Lorebook): string[] {
  const regexKeys = regexKeysOf(book.entries);
  const problems = regexKeys
    .slice(0, LOREBOOK_LIMITS.regexKeys)
    .map(keyProblem)
    .filter((p): p is string => p !== null);
  const past = regexKeys.length - LOREBOOK_LIMITS.regexKeys;
  if (past > 0)
    problems.push(
      `${past} /regex/ keys past the first ${LOREBOOK_LIMITS.regexKeys} were not checked; a book holds ${LOREBOOK_LIMITS.regexKeys}, so saving this one is refused until some go.`,
    );
  return problems;
}

/**
 * An NPC's lorebooks for their editor: `GET /api/npcs/:id/lorebooks` (each whole, with the keys that never
 * match), `PUT /api/lorebooks/:id {book}` (the edited book replaces the stored one, entries added, changed or
 * left out; JSON, or the same as application/octet-stream for a book past the 1 MB JSON body) and `DELETE /api/lorebooks/:id`. Attaching World Info is `PUT /api/npcs/:id/lorebooks` (routes.ts).
 * Mounted behind requireSession; every lorebook is its Player's only.
 */
export function lorebookRoutes({ sql }: { sql: Sql }): Router {
  const router = Router();
  const npcBooks = async (npcId: string) =>
    (await npcLorebooks(sql, npcId)).map((b) => ({ ...b, problems: problemsOf(b.book) }));

  router.get('/npcs/:id/lorebooks', async (req, res) => {
    const player = currentPlayer(res);
    const npc = isUuid(req.params.id) ? await getNpc(sql, player.id, req.params.id) : undefined;
    if (!npc) throw notFound('NPC');
    respond(res, NpcLorebooksResponse, { lorebooks: await npcBooks(npc.id) });
  });

  router.put('/lorebooks/:id', readBytes(MAX_BOOK_BYTES, bookReader, bookRefused), async (req, res) => {
    const player = currentPlayer(res);
    const { book: raw } = await bookBody(req);
    let book: Lorebook | null;
    try {
      book = readBook(wellFormed(raw));
    } catch (e) {
      if (e instanceof LorebookError) throw new AppError('LOREBOOK_TOO_LARGE', e.message);
      throw e;
    }
    if (!book) throw new AppError('INVALID_BODY', 'A lorebook is an object with its entries.');
    if (!isUuid(req.params.id) || !(await replaceLorebook(sql, player.id, req.params.id, book)))
      throw notFound('Lorebook');
    respond(res, LorebookProblemsResponse, { problems: problemsOf(book) });
  });

  router.delete('/lorebooks/:id', async (req, res) => {
    const player = currentPlayer(res);
    if (!isUuid(req.params.id) || !(await deleteLorebook(sql, player.id, req.params.id)))
      throw notFound('Lorebook');
    res.status(204).end();
  });

  return router;
}
