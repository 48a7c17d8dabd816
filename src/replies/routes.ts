import { type Request, type Response, Router } from 'express';
import { currentPlayer } from '../auth/index.ts';
import { getReply, type Message, markInterrupted } from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import { AppError, isUuid, notFound, respond, SseWriter } from '../http/index.ts';
import { type Frame, mergeFrames, type Part, type StartFrame } from '../parts/index.ts';
import { StopResponse } from '../wire/index.ts';
import type { ReplyHub } from './hub.ts';
import type { ReplyMirror } from './mirror.ts';

/** …/conversations/:id/messages/:messageId/…: a reply, by its Conversation and its Message. */
type ReplyRequest = Request<{ id: string; messageId: string }>;

/** Replies one Player may follow at once on one instance (each is an open stream and, across instances, reads). */
const FOLLOWERS_PER_PLAYER = 12;

export interface ReplyRouteDeps {
  sql: Sql;
  hub: ReplyHub;
  mirror: ReplyMirror;
  log: (message: string, error?: unknown) => void;
  /** Told of the Conversations whose replies were settled interrupted here (live publishing). Never throws. */
  afterInterrupted?: (conversationIds: string[]) => Promise<void>;
}

/**
 * Following and stopping a reply from anywhere (issue 17): any tab, device or instance. Mounted behind
 * requireSession.
 */
export function replyRoutes(deps: ReplyRouteDeps): Router {
  const router = Router();
  /** Replies each Player follows now, by Player id. */
  const following = new Map<string, number>();
  router.get('/conversations/:id/messages/:messageId/stream', (req, res) =>
    followReply(deps, following, req, res),
  );
  router.post('/conversations/:id/messages/:messageId/stop', (req, res) => stopReply(deps, req, res));
  return router;
}

/**
 * The reply as frames: its Parts so far (one `part` frame each, which fold back to exactly those Parts), then
 * each live frame, to its `finish`. A reply that has ended is sent whole from its row.
 */
async function followReply(
  deps: ReplyRouteDeps,
  following: Map<string, number>,
  req: ReplyRequest,
  res: Response,
): Promise<void> {
  const player = currentPlayer(res);
  // Listened for before anything is awaited: a viewer gone before its first byte ends its following too.
  const closed = new AbortController();
  res.on('close', () => closed.abort());
  const { id, messageId } = req.params;
  const reply =
    isUuid(id) && isUuid(messageId)
      ? await replyOrSoon(deps.sql, player.id, id, messageId, closed.signal)
      : undefined;
  if (!reply) throw notFound('Reply');
  // Each follower is a stream held open and, for a reply written elsewhere, reads of PostgreSQL: bounded.
  const mine = following.get(player.id) ?? 0;
  if (mine >= FOLLOWERS_PER_PLAYER)
    throw new AppError(
      'TOO_MANY_FOLLOWERS',
      `At most ${FOLLOWERS_PER_PLAYER} replies can be followed at once from one account.`,
      { retryAfter: 5 },
    );
  if (closed.signal.aborted) return;
  following.set(player.id, mine + 1);
  const sse = new SseWriter<Frame>(res, mergeFrames);
  sse.open();
  const sendSnapshot = (start: StartFrame, parts: Part[]) => {
    sse.send(start);
    for (const part of parts) sse.send({ type: 'part', messageId, part });
  };
  try {
    if (reply.status !== 'streaming') return sendStored(sse, reply);
    const here = await followHere(deps.hub, messageId, sse, sendSnapshot, closed.signal);
    if (here === 'ended') {
      // It ended here without a finish frame (its last write failed): the row says how.
      const stored = await getReply(deps.sql, player.id, id, messageId);
      if (stored) sse.send({ type: 'finish', messageId, status: finalStatus(stored), usage: stored.usage });
      return;
    }
    if (here) return;
    let seen = false;
    const outcome = await deps.mirror.follow(
      messageId,
      (f) => {
        if ('snapshot' in f) {
          seen = true;
          sendSnapshot(f.snapshot.start, f.snapshot.parts);
        } else sse.send(f.frame);
      },
      closed.signal,
    );
    if (outcome !== 'ended') return;
    // The reply ended without its last frames reaching this instance (it ended before it could be mirrored,
    // or its server died): the stored row says how. A dead server's reply is marked interrupted first.
    await deps.afterInterrupted?.(await markInterrupted(deps.sql));
    const stored = await getReply(deps.sql, player.id, id, messageId);
    if (!stored) return;
    if (!seen) return sendStored(sse, stored);
    if (stored.error) sse.send({ type: 'error', messageId, code: 'REPLY_ENDED', message: stored.error });
    sse.send({ type: 'finish', messageId, status: finalStatus(stored), usage: stored.usage });
  } catch (e) {
    deps.log('following a reply failed', e);
    sse.send({
      type: 'error',
      messageId,
      code: 'INTERNAL',
      message: 'The reply could not be followed. Reload to see it.',
    });
  } finally {
    sse.end();
    const n = (following.get(player.id) ?? 1) - 1;
    if (n > 0) following.set(player.id, n);
    else following.delete(player.id);
  }
}

/**
 * Stops a reply wherever it is being written, as the Stop button: what the Provider produced is kept. Answers
 * once the reply has ended (or after 10 s with 202, still stopping).
 */
async function stopReply(deps: ReplyRouteDeps, req: ReplyRequest, res: Response): Promise<void> {
  const player = currentPlayer(res);
  const { id, messageId } = req.params;
  // Waited for even if the asker goes: a Stop pressed and the tab closed still stops the reply.
  const reply =
    isUuid(id) && isUuid(messageId) ? await replyOrSoon(deps.sql, player.id, id, messageId) : undefined;
  if (!reply) throw notFound('Reply');
  for (let i = 0; i < 100; i++) {
    const now = i === 0 ? reply : await getReply(deps.sql, player.id, id, messageId);
    if (now?.status !== 'streaming') {
      respond(res, StopResponse, { status: now?.status ?? 'stopped' });
      return;
    }
    // Asked again every second: one request can miss a writer that was reconnecting its listener.
    if (i % 10 === 0) await deps.mirror.requestStop(messageId);
    await new Promise((r) => setTimeout(r, 100));
  }
  respond(res, StopResponse, { status: 'streaming' }, 202);
}

/** Follows a reply this process is writing; resolves when it ends or the viewer leaves. False when not here. */
async function followHere(
  hub: ReplyHub,
  messageId: string,
  sse: SseWriter<Frame>,
  sendSnapshot: (start: StartFrame, parts: Part[]) => void,
  closed: AbortSignal,
): Promise<boolean | 'ended'> {
  let end: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  let finished = false;
  const attached = hub.attach(
    messageId,
    ({ frame }) => {
      sse.send(frame);
      if (frame.type === 'finish') {
        finished = true;
        end();
      }
    },
    end,
  );
  if (!attached) return false;
  sendSnapshot(attached.snapshot.start, attached.snapshot.parts);
  closed.addEventListener('abort', end);
  try {
    await ended;
  } finally {
    attached.detach();
  }
  return finished || closed.aborted ? true : 'ended';
}

function sendStored(sse: SseWriter<Frame>, reply: Message & { playerMessageId: string | null }) {
  sse.send({
    type: 'start',
    messageId: reply.id,
    playerMessageId: reply.playerMessageId ?? '',
    npc: { id: reply.npcId ?? '', name: reply.npcName ?? 'NPC' },
    provider: reply.provider ?? '',
    model: reply.model ?? '',
  });
  for (const part of reply.parts) sse.send({ type: 'part', messageId: reply.id, part });
  if (reply.error)
    sse.send({ type: 'error', messageId: reply.id, code: 'REPLY_ENDED', message: reply.error });
  sse.send({ type: 'finish', messageId: reply.id, status: finalStatus(reply), usage: reply.usage });
}

/** How long a reply not found yet is asked for again, in steps (ms): 0.6 s in all. */
const STARTING_WAITS_MS = [50, 150, 400];
/** Lookups of one Player that may be asking again at once, on one instance; more are answered at once. */
const WAITING_PER_PLAYER = 4;
const waiting = new Map<string, number>();

/**
 * A reply, or one found a moment later: a start frame is sent while its claim is still being stored (ADR 0099),
 * so Stop pressed before it arrived, sent the moment it does, can come before the reply's row is there to read.
 * Bounded per Player (a missing reply costs four reads and 0.6 s); a follow stops waiting once its viewer has gone.
 */
async function replyOrSoon(
  sql: Sql,
  playerId: string,
  conversationId: string,
  messageId: string,
  gone?: AbortSignal,
) {
  const first = await getReply(sql, playerId, conversationId, messageId);
  if (first || (waiting.get(playerId) ?? 0) >= WAITING_PER_PLAYER) return first;
  waiting.set(playerId, (waiting.get(playerId) ?? 0) + 1);
  try {
    for (const wait of STARTING_WAITS_MS) {
      await new Promise((r) => setTimeout(r, wait));
      if (gone?.aborted) return undefined;
      const reply = await getReply(sql, playerId, conversationId, messageId);
      if (reply) return reply;
    }
    return undefined;
  } finally {
    const n = (waiting.get(playerId) ?? 1) - 1;
    if (n > 0) waiting.set(playerId, n);
    else waiting.delete(playerId);
  }
}

const finalStatus = (m: Message) => (m.status === 'streaming' ? 'interrupted' : m.status);
