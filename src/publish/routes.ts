import { Router } from 'express';
import { z } from 'zod';
import { currentPlayer } from '../auth/index.ts';
import { getConversation, messageIds as messageIdsOf } from '../conversations/index.ts';
import { isUuid, notFound, parseBody } from '../http/index.ts';
import { MESSAGE, SESSION } from '../lexicon/index.ts';
import { TurnChoice } from '../redaction/index.ts';
import { type PublishDeps, previewPublication, publish, removedWords, resume, unpublish } from './service.ts';
import { getDraft, getPublication, getPublishedRecords } from './store.ts';

const PublishBody = z
  .object({
    /** The Player's title; null or empty for the default made from the published text. */
    title: z.string().trim().max(200).nullable().optional(),
    choices: z.record(z.uuid(), TurnChoice).default({}),
    forgetRemoved: z.boolean().optional(),
  })
  .strict();

/** Publishing a Conversation to the Player's PDS. Mounted behind requireSession. */
export function publishRoutes(deps: PublishDeps): Router {
  const router = Router();
  const owned = async (playerId: string, id: string) => {
    if (!isUuid(id) || !(await getConversation(deps.sql, playerId, id))) throw notFound('Conversation');
    return id;
  };

  router.get('/conversations/:id/publication', async (req, res) => {
    const player = currentPlayer(res);
    const id = await owned(player.id, req.params.id);
    const [publication, draft, messageIds] = await Promise.all([
      getPublication(deps.sql, id),
      getDraft(deps.sql, id),
      messageIdsOf(deps.sql, id),
    ]);
    // The draft: the Player's choices and title, kept across unpublishing, and the words still covered from
    // turns that have since gone.
    const kept = draft
      ? {
          title: draft.title,
          choices: draft.choices,
          removedWords: [...new Set(Object.values(removedWords(draft, new Set(messageIds))).flat())],
        }
      : null;
    if (!publication) {
      res.json({ publication: null, draft: kept });
      return;
    }
    const records = await getPublishedRecords(deps.sql, id);
    res.json({
      publication: {
        ...publication,
        uri: `at://${publication.did}/${SESSION}/${publication.sessionRkey}`,
        turns: records
          .filter((r) => r.collection === MESSAGE)
          .map((r) => ({
            messageId: r.messageId,
            rkey: r.rkey,
            choice: r.choice,
            record: r.record,
            pending: r.pending,
          })),
      },
      draft: kept,
    });
  });

  router.post('/conversations/:id/publication/preview', async (req, res) => {
    const player = currentPlayer(res);
    const body = parseBody(req, PublishBody);
    const id = await owned(player.id, req.params.id);
    res.json(await previewPublication(deps, player, id, body));
  });

  router.put('/conversations/:id/publication', async (req, res) => {
    const player = currentPlayer(res);
    const body = parseBody(req, PublishBody);
    const id = await owned(player.id, req.params.id);
    res.json(await publish(deps, player, id, body));
  });

  router.post('/conversations/:id/publication/resume', async (req, res) => {
    const player = currentPlayer(res);
    const id = await owned(player.id, req.params.id);
    if (!(await getPublication(deps.sql, id))) throw notFound('Publication');
    res.json({ calls: await resume(deps, player.did, id) });
  });

  router.delete('/conversations/:id/publication', async (req, res) => {
    const player = currentPlayer(res);
    const id = await owned(player.id, req.params.id);
    await unpublish(deps, player, id);
    res.status(204).end();
  });

  return router;
}
