import { linkShared } from '../attachments/index.ts';
import { booksOf } from '../cards/index.ts';
import {
  conversationExistsSql,
  finishMessage,
  insertNpcMessage,
  readHistoryTail,
} from '../conversations/index.ts';
import type { StartFrame } from '../parts/index.ts';
import { buildTurnTools } from '../tools/index.ts';
import { costUsd } from '../village/index.ts';
import type { Handoff } from './context.ts';
import type { TurnDeps, TurnPlan } from './deps.ts';
import { keepLimits } from './madeFiles.ts';
import type { ReplyState, Settled } from './reply.ts';

// A reply's reads and writes around its Provider call: what it reads first, its row, its start frame and its
// last write (run.ts calls them in order).

export /**
 * History and the speaker's lorebooks are read and the Tool set built while the reply's row is inserted:
 * history excludes rows still streaming, so the two never race. All are awaited later (together, one round
 * trip instead of one after another); the catches only keep an early failure from going unhandled.
 */
function prepare(deps: TurnDeps, plan: TurnPlan, handoff: Handoff | undefined) {
  const { conversation, speaker, settings } = plan;
  const tail = readHistoryTail(deps.sql, conversation.id, conversation.summaryThrough);
  tail.catch(() => {});
  // An NPC known to have no lorebook (the turn's NPC read says so) reads none.
  const books = speaker.npc.hasBooks === false ? Promise.resolve([]) : booksOf(deps.sql, speaker.npc.id);
  books.catch(() => {});
  const toolsReady = buildTurnTools({
    sql: deps.sql,
    dataDir: deps.dataDir,
    outbound: deps.toolOutbound,
    limits: deps.toolLimits,
    sandboxQuotaMb: settings.sandboxQuotaMb,
    playerId: plan.playerId,
    conversationId: conversation.id,
    npc: speaker.npc,
    others: plan.participants.filter((p) => p.id !== speaker.npc.id).map((p) => p.name),
    question: handoff?.message ?? plan.playerMessage.text,
    // The sandbox's pull asks whether the Conversation is still there in the statement that reads its version.
    conversationExists: conversationExistsSql,
    shareLimits: keepLimits(settings),
  });
  toolsReady.catch(() => {});
  return { tail, books, toolsReady };
}

/** A hand-over's reply row (the first reply's was written with the claim). */
export function insertReply(deps: TurnDeps, plan: TurnPlan) {
  const { speaker } = plan;
  return insertNpcMessage(deps.sql, {
    conversationId: plan.conversation.id,
    npc: speaker.npc,
    provider: speaker.resolved.provider,
    model: speaker.resolved.model,
    instanceId: deps.instanceId,
  });
}

export function startFrame(plan: TurnPlan, messageId: string): StartFrame {
  const { speaker } = plan;
  return {
    type: 'start',
    messageId,
    playerMessageId: plan.playerMessage.id,
    npc: { id: speaker.npc.id, name: speaker.npc.name },
    provider: speaker.resolved.provider,
    model: speaker.resolved.model,
  };
}

/**
 * The reply's last write: its Parts, status, error and usage, what it cost, and the files it shared linked; and,
 * when `endsTurn`, the turn's claim released in the same statement (the plan's `endTurn` told).
 */
export async function store(
  deps: TurnDeps,
  plan: TurnPlan,
  state: ReplyState,
  end: Settled,
  endsTurn: boolean,
): Promise<void> {
  const { kind, resolved } = plan.speaker;
  const shared = state.parts.filter((p) => p.type === 'file').map((p) => p.id);
  if (shared.length)
    await linkShared(deps.sql, plan.conversation.id, state.messageId, shared).catch((e) =>
      deps.log('shared files not linked', e),
    );
  const { endTurn } = plan;
  const release =
    endsTurn && endTurn
      ? { conversationId: plan.conversation.id, instanceId: deps.instanceId, told: endTurn.told?.(deps.sql) }
      : undefined;
  const told = await finishMessage(
    deps.sql,
    state.messageId,
    {
      parts: state.parts,
      status: end.status,
      error: end.error,
      usage: end.usage,
      costUsd: costUsd(kind, resolved.provider, resolved.model, end.usage, state.cacheWrites),
      estimatedTokens: end.estimatedTokens,
      chargedTokens: end.chargedTokens,
    },
    release,
  );
  if (release) endTurn?.released(told);
}
