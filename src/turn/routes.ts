import { type Request, type Response, Router } from 'express';
import { z } from 'zod';
import { pendingAttachments, toPart } from '../attachments/index.ts';
import {
  beginPlayerTurn,
  beginRegenerate,
  checkpointMessages,
  markUnfinished,
  releaseTurn,
} from '../conversations/index.ts';
import type { Fragment, Queryable } from '../db/index.ts';
import { AppError, isUuid, parseBody, SseWriter } from '../http/index.ts';
import { turnMeter } from '../metrics/index.ts';
import {
  type AttachmentPart,
  type Frame,
  flattenText,
  mergeFrames,
  type Part,
  type StartFrame,
  wellFormed,
} from '../parts/index.ts';
import type { ReplyHub } from '../replies/index.ts';
import type { ProviderRegistry } from '../village/index.ts';
import { judge, readFirst } from './admit.ts';
import { CheckpointBatch } from './checkpoint.ts';
import { commitWithin } from './commitWait.ts';
import { runTurn, type Speaker, type TurnDeps, type TurnPlan } from './run.ts';
import { settleUndecided } from './undecided.ts';

const MessageBody = z
  .object({
    // Made storable (no NUL, no half surrogate pairs), as everything the Provider sends is.
    text: z.string().trim().max(100_000).transform(wellFormed).default(''),
    /** The NPC the Player addresses; otherwise chosen from the text (seed 003, step 4). */
    npcId: z.uuid().optional(),
    /** Uploads to this Conversation not yet sent (POST …/attachments), in the order they are shown. */
    attachments: z.array(z.uuid()).max(100).default([]),
    /**
     * Start a branch (ADR 0042): the Message follows `parentId` instead of the current head — an edit of a
     * Player Message sends its parent, a fork from a reply sends the reply; null starts again at the top.
     */
    branchFrom: z.object({ parentId: z.uuid().nullable() }).strict().optional(),
  })
  .strict()
  .refine((b) => b.text !== '' || b.attachments.length > 0, {
    message: 'a Message needs some text or an attachment',
    path: ['text'],
  });
const RegenerateBody = z.object({ npcId: z.uuid().optional() }).strict();

export interface TurnRouteDeps extends Omit<TurnDeps, 'checkpoints'> {
  providers: ProviderRegistry;
  checkpointMs: number;
  /** The replies in flight on this process, for others to follow and stop (replies/). */
  hub?: ReplyHub;
  /**
   * True once the instance is shutting down: new turns are sent elsewhere (503). A getter, not a value: it changes
   * after the routes are built, and each request must see it as it is then.
   */
  draining?: () => boolean;
  /**
   * Told when a turn has ended, with its claim's release (live publishing: see publish/live.ts): `sql` is sent in the
   * release's statement, and `after` finishes with what it returned. `after` never throws.
   */
  turnEnded?: {
    sql: (sql: Queryable, conversationId: string) => Fragment;
    after: (rows: { id: string }[]) => Promise<void>;
  };
}
type Deps = TurnRouteDeps & TurnDeps;

/**
 * The hot path: POST messages and regenerate. Mounted before requireSession: each resolves its session in its first
 * round trip of reads (admit.ts).
 */
export function turnRoutes(routeDeps: TurnRouteDeps): Router {
  const router = Router();
  const deps: Deps = {
    ...routeDeps,
    checkpoints: new CheckpointBatch(
      routeDeps.checkpointMs,
      async (rows) => {
        const values = rows.map((r) => ({ id: r.id, parts: r.value, text: flattenText(r.value) }));
        // One statement for all; should it fail, each alone, so one reply's problem is never everyone's.
        await checkpointMessages(routeDeps.sql, values).catch(async (e) => {
          routeDeps.log('checkpoint batch failed; writing each reply alone', e);
          for (const v of values) await checkpointMessages(routeDeps.sql, [v]).catch(() => {});
        });
      },
      (e) => routeDeps.log('checkpoint failed', e),
    ),
  };

  router.post('/conversations/:id/messages', async (req, res) => {
    const first = await readFirst(deps, req, res);
    const body = parseBody(req, MessageBody);
    const prepared = judge(deps, req, first, body.text, body.npcId, true);
    const attachments = await attachmentsFor(deps, req, first.player.id, body.attachments);
    if (attachments.length > prepared.settings.maxAttachmentsPerMessage)
      throw new AppError(
        'TOO_MANY_ATTACHMENTS',
        `A Message may carry at most ${prepared.settings.maxAttachmentsPerMessage} attachments; this one has ${attachments.length}.`,
      );
    const begun = await beginPlayerTurn(deps.sql, {
      conversationId: prepared.conversation.id,
      playerId: first.player.id,
      instanceId: deps.instanceId,
      text: body.text,
      titled: prepared.conversation.title !== null,
      attachments,
      limits: prepared.settings,
      reply: firstReply(prepared.speaker),
      branchFrom: body.branchFrom,
    });
    // The summary as the claim found it (a branch, this turn's or another tab's, may have set it aside).
    const conversation = { ...prepared.conversation, ...begun.summary };
    await stream(deps, res, {
      ...prepared,
      ...begun,
      conversation,
      playerName: first.player.handle ?? undefined,
    });
  });

  router.post('/conversations/:id/regenerate', async (req, res) => {
    const first = await readFirst(deps, req, res, { lastText: true });
    const body = parseBody(req, RegenerateBody);
    const prepared = judge(deps, req, first, first.lastText, body.npcId);
    const begun = await beginRegenerate(deps.sql, {
      conversationId: prepared.conversation.id,
      playerId: first.player.id,
      instanceId: deps.instanceId,
      limits: prepared.settings,
      reply: firstReply(prepared.speaker),
    });
    // The summary as the claim found it (a branch, this turn's or another tab's, may have set it aside).
    const conversation = { ...prepared.conversation, ...begun.summary };
    await stream(deps, res, {
      ...prepared,
      ...begun,
      conversation,
      playerName: first.player.handle ?? undefined,
    });
  });

  return router;
}

/**
 * The uploads a Message names, as Parts in the order named: each must be the Player's, for this Conversation and
 * not yet sent; otherwise the Message is refused whole (nothing is half-sent).
 */
async function attachmentsFor(
  deps: Deps,
  req: Request,
  playerId: string,
  ids: string[],
): Promise<AttachmentPart[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0 || !isUuid(req.params.id)) return [];
  const rows = await pendingAttachments(deps.sql, playerId, req.params.id, unique);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const missing = unique.filter((id) => !byId.has(id));
  if (missing.length)
    throw new AppError(
      'ATTACHMENT_NOT_FOUND',
      `${missing.length === 1 ? 'An attachment' : `${missing.length} attachments`} of this Message no longer exist or were already sent. Attach again.`,
      { details: { missing } },
    );
  return unique.map((id) => toPart(byId.get(id)!));
}

const firstReply = (s: Speaker) => ({ npc: s.npc, provider: s.resolved.provider, model: s.resolved.model });

async function stream(deps: Deps, res: Response, plan: TurnPlan) {
  const sse = new SseWriter<Frame>(res, mergeFrames);
  const abort = new AbortController();
  const { hub } = deps;
  // Closing this stream does not stop the reply (ADR 0037): Stop does, from any tab or instance. Meanwhile
  // others can follow it, through the hub.
  const begun: string[] = [];
  // Each reply's Parts as they stand: what a reply whose final write failed is kept with (markUnfinished).
  const partsOf = new Map<string, () => Part[]>();
  const track = (start: StartFrame, parts: () => Part[]) => {
    begun.push(start.messageId);
    partsOf.set(start.messageId, parts);
    hub?.begin(start, parts, (reason) => abort.abort(reason));
  };
  const finished = new Set<string>();
  const meter = turnMeter();
  const out = (frame: Frame) => {
    meter.frame(frame);
    sse.send(frame);
    hub?.publish(frame);
    if (frame.type === 'finish') {
      finished.add(frame.messageId);
      hub?.end(frame.messageId);
    }
  };
  // A frame that may be the turn's last (a finish or an error) is held until the next one arrives: the last
  // is sent only after the claim is released, so reading it means the Conversation is ready for the next Message.
  let held: Frame | undefined;
  const send = (frame: Frame) => {
    if (held) out(held);
    held = undefined;
    if (frame.type === 'finish' || frame.type === 'error') held = frame;
    else out(frame);
  };
  // Released with the reply that ends the turn, in its last write (run.ts), unless the turn ended otherwise.
  const { turnEnded } = deps;
  let released: { id: string }[] | undefined;
  let undecided = false;
  const committed = plan.committed && commitWithin(plan.committed, deps.commitWaitMs ?? 15_000);
  const endTurn = {
    told: turnEnded && ((q: Queryable) => turnEnded.sql(q, plan.conversation.id)),
    released: (rows: { id: string }[]) => {
      released = rows;
    },
    undecided: () => {
      undecided = true;
    },
  };
  try {
    sse.open();
    await runTurn(deps, { ...plan, committed, track, endTurn }, abort.signal, send);
  } catch (e) {
    deps.log('turn failed', e);
    send({
      type: 'error',
      messageId: null,
      code: 'INTERNAL',
      message: 'The reply could not be completed.',
    });
  } finally {
    // Not before the claim is stored (or known not to be): until then markUnfinished would find no row.
    await committed?.catch(() => {});
    // Told in the claim's release (live publishing dates the turn's end here): whoever sees the Conversation
    // free also sees that a turn has just ended. One statement, one round trip before the last frame.
    const told =
      released ??
      (await releaseTurn(deps.sql, plan.conversation.id, deps.instanceId, endTurn.told?.(deps.sql)).catch(
        (e) => {
          deps.log('turn claim not released', e);
          return [];
        },
      ));
    if (told.length) await turnEnded?.after(told);
    if (held) out(held);
    await leaveUnfinished(deps, plan, { begun, finished, partsOf, undecided });
    for (const id of begun) hub?.end(id);
    meter.end();
    sse.end();
  }
}

/**
 * A reply that never sent its finish (its last write failed) must not stay "streaming" under a live server: marked
 * interrupted, with the Parts held here, before its followers are told it ended. (The first reply's row was written
 * with the claim: it counts even if the turn failed before it began.) An undecided claim's reply is ended with the
 * claim's release instead, later (undecided.ts): marked here alone, the release, which looks for it still
 * streaming, would never come.
 */
async function leaveUnfinished(
  deps: Deps,
  plan: TurnPlan,
  r: { begun: string[]; finished: Set<string>; partsOf: Map<string, () => Part[]>; undecided: boolean },
) {
  if (r.undecided)
    void settleUndecided(deps, { conversationId: plan.conversation.id, messageId: plan.replyId }, (id) =>
      tellEnded(deps, id),
    ).catch((e) => deps.log('an undecided turn claim could not be settled', e));
  const unfinished = [...new Set([plan.replyId, ...r.begun])].filter(
    (id) => !r.finished.has(id) && !(r.undecided && id === plan.replyId),
  );
  const left = unfinished.map((id) => ({ id, parts: r.partsOf.get(id)?.() }));
  if (left.length) await markUnfinished(deps.sql, left).catch((e) => deps.log('replies not marked', e));
}

/** A turn's end told on its own, as its claim's release tells it (an undecided claim's, released later). */
async function tellEnded(deps: Deps, conversationId: string): Promise<void> {
  const { turnEnded } = deps;
  if (turnEnded)
    await turnEnded.after(await deps.sql<{ id: string }[]>`${turnEnded.sql(deps.sql, conversationId)}`);
}
