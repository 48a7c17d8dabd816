import { Router } from 'express';
import { currentPlayer } from '../auth/index.ts';
import { getReply, type Message, markInterrupted } from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import { isUuid, notFound, SseWriter } from '../http/index.ts';
import { type Frame, mergeFrames, type Part, type StartFrame } from '../parts/index.ts';
import type { ReplyHub } from './hub.ts';
import type { ReplyMirror } from './mirror.ts';

export interface ReplyRouteDeps {
  sql: Sql;
  hub: ReplyHub;
  mirror: ReplyMirror;
  log: (message: string, error?: unknown) => void;
}

/**
 * Following and stopping a reply from anywhere (issue 17): any tab, device or instance. Mounted behind
 * requireSession.
 */
export function replyRoutes(deps: ReplyRouteDeps): Router {
  const router = Router();

  /**
   * The reply as frames: its Parts so far (one `part` frame each, which fold back to exactly those Parts), then
   * each live frame, to its `finish`. A reply that has ended is sent whole from its row.
   */
  router.get('/conversations/:id/messages/:messageId/stream', async (req, res) => {
    const player = currentPlayer(res);
    const { id, messageId } = req.params;
    const reply =
      isUuid(id) && isUuid(messageId) ? await getReply(deps.sql, player.id, id, messageId) : undefined;
    if (!reply) throw notFound('Reply');
    const sse = new SseWriter<Frame>(res, mergeFrames);
    sse.open();
    const closed = new AbortController();
    res.on('close', () => closed.abort());
    const sendSnapshot = (start: StartFrame, parts: Part[]) => {
      sse.send(start);
      for (const part of parts) sse.send({ type: 'part', messageId, part });
    };
    try {
      if (reply.status !== 'streaming') return sendStored(sse, reply);
      const here = await followHere(deps.hub, messageId, sse, sendSnapshot, closed.signal);
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
      await markInterrupted(deps.sql);
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
    }
  });

  /**
   * Stops a reply wherever it is being written, as the Stop button: what the Provider produced is kept. Answers
   * once the reply has ended (or after 10 s with 202, still stopping).
   */
  router.post('/conversations/:id/messages/:messageId/stop', async (req, res) => {
    const player = currentPlayer(res);
    const { id, messageId } = req.params;
    const reply =
      isUuid(id) && isUuid(messageId) ? await getReply(deps.sql, player.id, id, messageId) : undefined;
    if (!reply) throw notFound('Reply');
    if (reply.status === 'streaming') await deps.mirror.requestStop(messageId);
    for (let i = 0; i < 200; i++) {
      const now = await getReply(deps.sql, player.id, id, messageId);
      if (now?.status !== 'streaming') {
        res.json({ status: now?.status ?? 'stopped' });
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    res.status(202).json({ status: 'streaming' });
  });

  return router;
}

/** Follows a reply this process is writing; resolves when it ends or the viewer leaves. False when not here. */
async function followHere(
  hub: ReplyHub,
  messageId: string,
  sse: SseWriter<Frame>,
  sendSnapshot: (start: StartFrame, parts: Part[]) => void,
  closed: AbortSignal,
): Promise<boolean> {
  let end: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  const attached = hub.attach(messageId, ({ frame }) => {
    sse.send(frame);
    if (frame.type === 'finish') end();
  });
  if (!attached) return false;
  sendSnapshot(attached.snapshot.start, attached.snapshot.parts);
  closed.addEventListener('abort', end);
  try {
    await ended;
  } finally {
    attached.detach();
  }
  return true;
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

const finalStatus = (m: Message) => (m.status === 'streaming' ? 'interrupted' : m.status);
