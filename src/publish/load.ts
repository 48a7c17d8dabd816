import {
  allMessages,
  everyMessageId,
  getConversation,
  getParticipants,
  markInterrupted,
} from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { skillNames } from '../tools/index.ts';
import { npcAvatars } from './avatars.ts';
import { turnEnded } from './hold.ts';
import type { Loaded } from './plan.ts';
import type { PublishTurn } from './projection.ts';
import { getDraft, getPublication, getPublishedRecords } from './store.ts';

/**
 * The path's turns. A reply still being written refuses publishing (TURN_IN_PROGRESS) unless `streaming` is
 * allowed (covering at once, which touches only records already out).
 */
async function loadTurns(
  sql: Sql,
  conversationId: string,
  streaming: 'refuse' | 'allow',
): Promise<PublishTurn[]> {
  let messages = await allMessages(sql, conversationId);
  // A reply left streaming by a server that has since died is not in progress: it is marked interrupted here
  // (as every server does at start), so it cannot block publishing while the others keep running.
  if (streaming === 'refuse' && messages.some((m) => m.status === 'streaming')) {
    const ended = await markInterrupted(sql);
    // Ended now: a live Conversation gives the reply its hold-back window (ADR 0046).
    await turnEnded(sql, ended);
    if (ended.length) messages = await allMessages(sql, conversationId);
    if (messages.some((m) => m.status === 'streaming')) {
      throw new AppError(
        'TURN_IN_PROGRESS',
        'An NPC is still answering. Publish once the reply has finished.',
      );
    }
  }
  return messages.map((m) => ({
    messageId: m.id,
    role: m.role,
    npcId: m.npcId,
    parts: m.parts,
    createdAt: m.createdAt,
    provider: m.provider,
    model: m.model,
  }));
}

/** Everything a plan is made from but the network's answers (plan.ts), for the Player's own Conversation. */
export async function loadForPlan(
  sql: Sql,
  player: { id: string; did: string },
  conversationId: string,
  streaming: 'refuse' | 'allow' = 'refuse',
): Promise<Loaded> {
  const conversation = await getConversation(sql, player.id, conversationId);
  if (!conversation) throw new AppError('NOT_FOUND', 'Conversation not found.');
  const [turns, participants, existing, current, draft, skills, everyId] = await Promise.all([
    loadTurns(sql, conversationId, streaming),
    getParticipants(sql, conversationId),
    getPublishedRecords(sql, conversationId),
    getPublication(sql, conversationId),
    getDraft(sql, conversationId),
    skillNames(sql, player.id),
    everyMessageId(sql, conversationId),
  ]);
  return {
    did: player.did,
    turns,
    participants,
    existing,
    sessionRkey: current?.sessionRkey,
    draft,
    skills,
    everyId,
    avatars: await npcAvatars(
      sql,
      participants.map((n) => n.id),
    ),
  };
}
