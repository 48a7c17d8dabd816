import { Router } from 'express';
import { z } from 'zod';
import { currentPlayer } from '../auth/index.ts';
import type { Sql } from '../db/index.ts';
import { AppError, isUuid, notFound, parseBody, respond } from '../http/index.ts';
import { wellFormed } from '../parts/index.ts';
import { getNpc } from '../village/index.ts';
import { LorebookProblemsResponse, NpcLorebooksResponse } from '../wire/index.ts';
import { keyProblem } from './keys.ts';
import { type Lorebook, LorebookError, readBook } from './lorebook.ts';
import { deleteLorebook, npcLorebooks, replaceLorebook } from './store.ts';

/** A whole book, as the editor sends it back; bounded by readBook (LOREBOOK_LIMITS) and by the JSON body limit. */
const BookBody = z.object({ book: z.record(z.string(), z.unknown()) }).strict();

/** The keys of a book that never match, in words (a regex RE2 refuses, or too long a pattern). */
const problemsOf = (book: Lorebook) =>
  book.entries.flatMap((e) =>
    [...e.keys, ...(e.secondary_keys ?? [])].map(keyProblem).filter((p): p is string => p !== null),
  );

/**
 * An NPC's lorebooks for their editor: `GET /api/npcs/:id/lorebooks` (each whole, with the keys that never
 * match), `PUT /api/lorebooks/:id {book}` (the edited book replaces the stored one, entries added, changed or
 * left out) and `DELETE /api/lorebooks/:id`. Attaching World Info is `PUT /api/npcs/:id/lorebooks` (routes.ts).
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

  router.put('/lorebooks/:id', async (req, res) => {
    const player = currentPlayer(res);
    const { book: raw } = parseBody(req, BookBody);
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
