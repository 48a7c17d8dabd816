import { type Response, Router } from 'express';
import { z } from 'zod';
import { currentPlayer } from '../auth/index.ts';
import { getConversation, messageIds as messageIdsOf } from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import { isUuid, notFound, parseBody, respond } from '../http/index.ts';
import { MESSAGE, SESSION } from '../lexicon/index.ts';
import { plainName } from '../parts/index.ts';
import { AgentChoices, TurnChoice } from '../redaction/index.ts';
import { PublicationResponse, PublishPreview, PublishResult, ResumeResponse } from '../wire/index.ts';
import { holdBack } from './hold.ts';
import { setLive } from './live.ts';
import { removedWords } from './plan.ts';
import { extendsReviewed } from './review.ts';
import { type PublishDeps, previewPublication, publish, resume, unpublish } from './service.ts';
import {
  getDraft,
  getPublication,
  getPublishedRecords,
  getReviewedPath,
  withPublicationLock,
} from './store.ts';

const PublishBody = z
  .object({
    /** The Player's title; null or empty for the default made from the published text. */
    title: z.string().max(800).transform(plainName).pipe(z.string().max(200)).nullable().optional(),
    choices: z.record(z.uuid(), TurnChoice).default({}),
    /** What the session says of each NPC (by NPC id); absent keeps the draft's. */
    agents: AgentChoices.optional(),
    forgetRemoved: z.boolean().optional(),
    /** The turns the Player reviewed, in order (the publish page sends them): 409 if the path moved since. */
    path: z.array(z.uuid()).max(100_000).optional(),
    /** Preview only: the turns whose links and mentions to look up now (none until the Player asks). */
    check: z.array(z.uuid()).max(100_000).optional(),
  })
  .strict();

const LiveBody = z
  .object({
    live: z.boolean(),
    /** New turns go out withheld (holes) unless released, instead of published. */
    withholdNew: z.boolean().default(false),
    /** How long a finished turn waits before it goes out: the time to hold it back. */
    delaySeconds: z.number().int().min(0).max(3600).default(30),
  })
  .strict();
const HoldBody = z.object({ messageId: z.uuid() }).strict();

/** Publishing a Conversation to the Player's PDS. Mounted behind requireSession. */
export function publishRoutes(deps: PublishDeps): Router {
  const router = Router();
  const owned = async (res: Response, id: string) => {
    const player = currentPlayer(res);
    if (!isUuid(id) || !(await getConversation(deps.sql, player.id, id))) throw notFound('Conversation');
    return { player, id };
  };

  router.get('/conversations/:id/publication', async (req, res) => {
    const { id } = await owned(res, req.params.id);
    respond(res, PublicationResponse, await publicationOf(deps.sql, id));
  });

  // Live publishing (ADR 0043): new turns follow on their own, after a delay in which one can be held back.
  router.put('/conversations/:id/publication/live', async (req, res) => {
    const body = parseBody(req, LiveBody);
    const { player, id } = await owned(res, req.params.id);
    // After any append under way (it holds the lock): once this answers, no append starts on the old setting.
    await withPublicationLock(deps.leases, id, () => setLive(deps.sql, player.id, id, body));
    res.status(204).end();
  });

  router.post('/conversations/:id/publication/hold', async (req, res) => {
    const { messageId } = parseBody(req, HoldBody);
    const { player, id } = await owned(res, req.params.id);
    await withPublicationLock(deps.leases, id, () => holdBack(deps.sql, player.id, id, messageId));
    res.status(204).end();
  });

  router.post('/conversations/:id/publication/preview', async (req, res) => {
    const body = parseBody(req, PublishBody);
    const { player, id } = await owned(res, req.params.id);
    respond(res, PublishPreview, await previewPublication(deps, player, id, body));
  });

  router.put('/conversations/:id/publication', async (req, res) => {
    const body = parseBody(req, PublishBody);
    const { player, id } = await owned(res, req.params.id);
    const result = await withPublicationLock(deps.leases, id, () => publish(deps, player, id, body));
    respond(res, PublishResult, result);
  });

  router.post('/conversations/:id/publication/resume', async (req, res) => {
    const { player, id } = await owned(res, req.params.id);
    if (!(await getPublication(deps.sql, id))) throw notFound('Publication');
    const calls = await withPublicationLock(deps.leases, id, () => resume(deps, player.did, id));
    respond(res, ResumeResponse, { calls });
  });

  router.delete('/conversations/:id/publication', async (req, res) => {
    const { player, id } = await owned(res, req.params.id);
    await withPublicationLock(deps.leases, id, () => unpublish(deps, player, id));
    res.status(204).end();
  });

  return router;
}

/** GET …/publication: the publication as it stands, and the draft kept across unpublishing. */
async function publicationOf(sql: Sql, id: string): Promise<PublicationResponse> {
  const [publication, draft, messageIds] = await Promise.all([
    getPublication(sql, id),
    getDraft(sql, id),
    messageIdsOf(sql, id),
  ]);
  // The draft: the Player's choices and title, kept across unpublishing, and the words still covered from
  // turns that have since gone.
  const kept = draft
    ? {
        title: draft.title,
        choices: draft.choices,
        agents: draft.agents,
        removedWords: [...new Set(Object.values(removedWords(draft, new Set(messageIds))).flat())],
      }
    : null;
  if (!publication) return { publication: null, draft: kept };
  const [records, reviewed] = await Promise.all([getPublishedRecords(sql, id), getReviewedPath(sql, id)]);
  return {
    publication: {
      ...publication,
      // Live appends wait while the path shown has left the one reviewed (ADR 0046): the page says so.
      livePaused: publication.live && !extendsReviewed(messageIds, reviewed),
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
  };
}
