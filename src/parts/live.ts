import type { z } from 'zod';
import { foldPart } from './fold.ts';
import type { FinishFrame, Frame, UsageSchema } from './frames.ts';
import type { Part } from './types.ts';

/** A reply as the browser shows it while its frames arrive. */
export interface LiveReply {
  id: string;
  role: 'npc';
  npcName: string;
  parts: Part[];
  status: 'streaming' | FinishFrame['status'];
  error: string | null;
  provider: string;
  model: string;
  usage: z.output<typeof UsageSchema> | null;
  costUsd: null;
}

/** What is streaming right now: the optimistic Player Message (its id made real by `start`) and the replies. */
export interface LiveTurn<P extends { id: string } = { id: string }> {
  player?: P;
  replies: LiveReply[];
  /** Regenerate hides the reply it replaces until the new one is stored. */
  hideAfterSeq?: string;
  /** An error of the turn, not of one reply. */
  error?: string;
}

/**
 * Applies one frame to the live turn: the same fold the server used (parts/fold.ts), so reload equals stream.
 * Pure: a new state when something changed, the replies a frame does not name shared (React compares them by
 * identity).
 */
export function applyFrame<P extends { id: string }>(live: LiveTurn<P>, frame: Frame): LiveTurn<P> {
  switch (frame.type) {
    case 'start':
      return {
        ...live,
        player: live.player ? { ...live.player, id: frame.playerMessageId } : live.player,
        replies: [
          ...live.replies,
          {
            id: frame.messageId,
            role: 'npc',
            npcName: frame.npc.name,
            parts: [],
            status: 'streaming',
            error: null,
            provider: frame.provider,
            model: frame.model,
            usage: null,
            costUsd: null,
          },
        ],
      };
    case 'part':
      return {
        ...live,
        replies: live.replies.map((r) =>
          r.id === frame.messageId ? { ...r, parts: foldPart(r.parts, frame.part) } : r,
        ),
      };
    case 'error':
      if (!frame.messageId) return { ...live, error: frame.message };
      return {
        ...live,
        replies: live.replies.map((r) => (r.id === frame.messageId ? { ...r, error: frame.message } : r)),
      };
    case 'finish':
      return {
        ...live,
        replies: live.replies.map((r) =>
          r.id === frame.messageId ? { ...r, status: frame.status, usage: frame.usage } : r,
        ),
      };
  }
}
