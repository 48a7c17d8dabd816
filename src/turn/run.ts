import { type LanguageModel, streamText } from 'ai';
import type { ProviderKind } from '../config.ts';
import {
  type Conversation,
  checkpointMessage,
  finishMessage,
  type HistoryRow,
  insertNpcMessage,
  type Message,
  readHistoryTail,
  saveSummary,
  type Usage,
} from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import { type Frame, flattenText, foldPart, type Part } from '../parts/index.ts';
import { costUsd, type Npc, type ResolvedModel, type VillageSettings } from '../village/index.ts';
import { Checkpointer } from './checkpoint.ts';
import { addUsage, errorMessage, toFragment, toUsage } from './fragments.ts';
import { attributedText, toModelMessages } from './history.ts';
import { assembleSystemPrompt } from './prompt.ts';
import { foldIntoSummary } from './summary.ts';
import { windowHistory } from './window.ts';

export interface TurnDeps {
  sql: Sql;
  instanceId: number;
  checkpointMs: number;
  chunkTimeoutMs: number;
  log: (message: string, error?: unknown) => void;
}

export interface Speaker {
  npc: Npc;
  resolved: ResolvedModel;
  model: LanguageModel;
  kind: ProviderKind | undefined;
}

export interface TurnPlan {
  conversation: Conversation;
  participants: Npc[];
  speaker: Speaker;
  playerMessage: Message;
  settings: VillageSettings;
}

type EndStatus = 'complete' | 'stopped' | 'failed';

/**
 * One NPC reply, as the frames of the SSE stream. Every exit path (clean finish, the Player leaving, a
 * Provider error or a broken socket) persists what had arrived, with usage when the Provider reported it
 * (ADR 0003). The caller stops a reply by aborting `signal`; the generator unwinds at the next stream part
 * and still folds and stores everything produced until then.
 */
export async function* runReply(deps: TurnDeps, plan: TurnPlan, signal: AbortSignal): AsyncGenerator<Frame> {
  const { sql } = deps;
  const { conversation, speaker } = plan;
  // History is read while the reply's row is inserted; it excludes rows still streaming, so the two never race.
  const tail = readHistoryTail(sql, conversation.id, conversation.summaryThrough);
  tail.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
  const message = await insertNpcMessage(sql, {
    conversationId: conversation.id,
    npc: speaker.npc,
    provider: speaker.resolved.provider,
    model: speaker.resolved.model,
    instanceId: deps.instanceId,
  });
  yield {
    type: 'start',
    messageId: message.id,
    playerMessageId: plan.playerMessage.id,
    npc: { id: speaker.npc.id, name: speaker.npc.name },
    provider: speaker.resolved.provider,
    model: speaker.resolved.model,
  };

  let parts: Part[] = [];
  let status: EndStatus = 'complete';
  let error: string | null = null;
  let usage: Usage | null = null;
  let stepUsage: Usage | null = null;
  const checkpointer = new Checkpointer<Part[]>(
    deps.checkpointMs,
    (p) => checkpointMessage(sql, message.id, p, flattenText(p)),
    (e) => deps.log('checkpoint failed', e),
  );
  try {
    const context = await assembleContext(deps, plan, await tail, signal);
    const result = streamText({
      model: speaker.model,
      instructions: context.instructions,
      messages: context.messages,
      abortSignal: signal,
      reasoning: speaker.npc.thinking ? 'medium' : undefined,
      timeout: { chunkMs: deps.chunkTimeoutMs, firstChunkMs: deps.chunkTimeoutMs },
      // Errors arrive as stream parts and are handled below; the SDK's default would log them again.
      onError: () => {},
    });
    for await (const chunk of result.stream) {
      const fragment = toFragment(chunk);
      if (fragment) {
        parts = foldPart(parts, fragment);
        checkpointer.update(parts);
        yield { type: 'part', messageId: message.id, part: fragment };
      } else if (chunk.type === 'finish-step') stepUsage = addUsage(stepUsage, toUsage(chunk.usage));
      else if (chunk.type === 'finish') usage = toUsage(chunk.totalUsage);
      else if (chunk.type === 'abort') {
        // Our signal is the Player stopping; any other abort is the SDK's own timeout on a silent Provider.
        if (signal.aborted) status = 'stopped';
        else {
          status = 'failed';
          error = `The Provider sent nothing for ${Math.round(deps.chunkTimeoutMs / 1000)} s, so the reply was ended.`;
        }
      } else if (chunk.type === 'error') {
        status = 'failed';
        error = errorMessage(chunk.error);
      }
    }
    if (signal.aborted && status === 'complete') status = 'stopped';
  } catch (e) {
    // AI SDK 7 throws out of the loop when the Provider's socket breaks mid-stream.
    if (signal.aborted) status = 'stopped';
    else {
      status = 'failed';
      error = errorMessage(e);
    }
  } finally {
    await checkpointer.stop();
    usage ??= stepUsage;
    const cost = costUsd(speaker.kind, speaker.resolved.provider, speaker.resolved.model, usage);
    await finishMessage(sql, message.id, { parts, status, error, usage, costUsd: cost });
  }
  if (status === 'failed') {
    yield {
      type: 'error',
      messageId: message.id,
      code: 'PROVIDER_ERROR',
      message: error ?? 'The Provider failed.',
    };
  }
  yield { type: 'finish', messageId: message.id, status, usage };
}

/**
 * History, windowed to the Village budget with what falls off folded into the rolling summary first, and
 * the system prompt in the seed's order.
 */
async function assembleContext(deps: TurnDeps, plan: TurnPlan, tail: HistoryRow[], signal: AbortSignal) {
  const { conversation, participants, speaker, settings } = plan;
  const party = participants.length > 1;
  const { kept, dropped } = windowHistory(tail, settings.historyBudget, (t) => attributedText(t, party));
  let summary = conversation.summary;
  if (dropped.length) {
    try {
      summary = await foldIntoSummary({
        model: speaker.model,
        summary,
        dropped,
        party,
        budget: settings.historyBudget,
        signal,
      });
      await saveSummary(deps.sql, conversation.id, summary, dropped.at(-1)!.seq);
    } catch (e) {
      // The reply goes on with the older summary; the same turns are folded in on the next turn.
      deps.log('rolling summary failed', e);
    }
  }
  const roster = participants.filter((p) => p.id !== speaker.npc.id);
  const instructions = assembleSystemPrompt({
    identity: speaker.npc,
    playerPrompt: speaker.npc.prompt,
    skills: [],
    unreachableServers: [],
    memories: [],
    roster,
    summary,
  });
  return { instructions, messages: toModelMessages(kept, party) };
}
