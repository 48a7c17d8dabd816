import { hasToolCall, isStepCount, type LanguageModel, streamText } from 'ai';
import type { ProviderKind } from '../config.ts';
import {
  type Conversation,
  finishMessage,
  getConversation,
  insertNpcMessage,
  linkShared,
  type Message,
  readHistoryTail,
  type Usage,
} from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import type { Outbound } from '../outbound/index.ts';
import { type Frame, foldPart, type Part, type StartFrame, wellFormed } from '../parts/index.ts';
import { SHUTDOWN } from '../replies/index.ts';
import { buildTurnTools, MESSAGE_NPC, sharedFile, TOOL_NAMES, type ToolLimits } from '../tools/index.ts';
import {
  costUsd,
  type Npc,
  outputLimit,
  type ResolvedModel,
  thinkingSupport,
  type VillageSettings,
} from '../village/index.ts';
import { charsOf, DEFAULT_REPLY_LIMITS, type LimitReached, ReplyBounds, type ReplyLimits } from './bounds.ts';
import { type BudgetSpent, TurnBudget } from './budget.ts';
import type { CheckpointBatch } from './checkpoint.ts';
import { assembleContext, type Handoff } from './context.ts';
import { counted, endingOf, outputTokens } from './endings.ts';
import { blocked, describeFailure, type Failure, unfinished } from './failures.ts';
import { addUsage, toFragment, toUsage } from './fragments.ts';
import { instructionsFor } from './prompt.ts';
import { sectionBreak, thinkingOptions } from './thinking.ts';

export interface TurnDeps {
  sql: Sql;
  instanceId: number;
  /** Shared by every reply of this process (turnRoutes makes it). */
  checkpoints: CheckpointBatch<Part[]>;
  chunkTimeoutMs: number;
  dataDir: string;
  toolOutbound: Outbound;
  toolLimits?: ToolLimits;
  /** Most model steps (tool rounds) in one reply. */
  maxSteps?: number;
  /** How many characters of Parts, and how long, one reply may take. */
  replyLimits?: ReplyLimits;
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
  /** The first reply's row, written with the claim (see beginPlayerTurn). */
  replyId: string;
  settings: VillageSettings;
  playerId: string;
  /** Who `{{user}}` is in an NPC's text (the Player's handle). */
  playerName?: string;
  /** The Model for another NPC of the Party, or a reason it has none (checked when it is handed over to). */
  speakerFor(npc: Npc): Speaker | string;
  /** Told of each reply as it starts, with a way to read its Parts as they stand (replies/ follows it). */
  track?: (start: StartFrame, parts: () => Part[]) => void;
}

type EndStatus = 'complete' | 'truncated' | 'stopped' | 'failed' | 'interrupted';

const endedBy = (signal: AbortSignal): EndStatus => (signal.reason === SHUTDOWN ? 'interrupted' : 'stopped');

interface ReplyEnd {
  messageId: string;
  status: EndStatus;
  handoff?: { npc: string; message: string };
}

/**
 * A turn: the first speaker's reply and, in a Party, the replies of the NPCs it hands over to with
 * `message_npc`, all in the same stream. Each hand-over counts against the Village hop limit; reaching it ends
 * the turn with an error frame that says so.
 */
export async function runTurn(
  deps: TurnDeps,
  plan: TurnPlan,
  signal: AbortSignal,
  emit: (frame: Frame) => void,
): Promise<void> {
  let speaker = plan.speaker;
  let conversation = plan.conversation;
  let handoff: Handoff | undefined;
  const budget = new TurnBudget(deps.sql, plan.playerId, plan.settings);
  // Who has answered this turn (each in turn: every NPC once, in the order they joined).
  const answered = new Set<string>();
  for (let hops = 0; ; hops++) {
    // The first reply's row was written with the claim; each hand-over writes its own.
    const replyId = hops === 0 ? plan.replyId : undefined;
    const end = await runReply(
      deps,
      { ...plan, conversation, speaker },
      replyId,
      handoff,
      budget,
      signal,
      emit,
    );
    answered.add(speaker.npc.id);
    if (end.status !== 'complete' || signal.aborted) return;
    // No hand-over: in a Party whose Conversation asks each NPC in turn, the next one who has not answered yet.
    const nextInTurn = end.handoff ? undefined : nextToAnswer(plan, conversation, speaker.npc.id, answered);
    if (!end.handoff && !nextInTurn) return;
    // The next NPC's reply is another Provider call: asked for before its row is made.
    const spent = await budget.spent();
    if (spent) {
      emit({ type: 'error', messageId: end.messageId, ...spent });
      return;
    }
    if (hops >= plan.settings.hopLimit) {
      emit({
        type: 'error',
        messageId: end.messageId,
        code: 'HOP_LIMIT',
        message: `The NPCs handed the conversation over ${hops} time(s), the Village's hop limit, so it stops here. Reply to go on.`,
      });
      return;
    }
    const next = nextInTurn ?? plan.participants.find((p) => p.name === end.handoff!.npc);
    const nextSpeaker = next ? plan.speakerFor(next) : `There is no NPC named ${end.handoff!.npc} here.`;
    if (typeof nextSpeaker === 'string') {
      emit({ type: 'error', messageId: end.messageId, code: 'HANDOFF_FAILED', message: nextSpeaker });
      return;
    }
    handoff = end.handoff ? { from: speaker.npc.name, message: end.handoff.message } : undefined;
    speaker = nextSpeaker;
    // The next speaker's context is assembled from scratch: the summary may have moved on.
    conversation = (await getConversation(deps.sql, plan.playerId, conversation.id)) ?? conversation;
  }
}

/**
 * One NPC reply, as the frames of the SSE stream, handed to `emit` as they come (a callback, not an async
 * generator: a generator layer costs promise hops on every delta). Every exit path (clean finish, the Player
 * leaving, a Provider error or a broken socket) persists what had arrived, with usage when the Provider
 * reported it (ADR 0003). The caller stops a reply by aborting `signal`; the loop unwinds at the next stream
 * part and still folds and stores everything produced until then.
 */
async function runReply(
  deps: TurnDeps,
  plan: TurnPlan,
  replyId: string | undefined,
  handoff: Handoff | undefined,
  budget: TurnBudget,
  signal: AbortSignal,
  emit: (frame: Frame) => void,
): Promise<ReplyEnd> {
  const { sql } = deps;
  const { conversation, speaker } = plan;
  // History is read and the Tool set built while the reply's row is inserted: history excludes rows still
  // streaming, so the two never race. Both are awaited below; the catches only keep an early failure from
  // going unhandled.
  const tail = readHistoryTail(sql, conversation.id, conversation.summaryThrough);
  tail.catch(() => {});
  const toolsReady = buildTurnTools({
    sql,
    dataDir: deps.dataDir,
    outbound: deps.toolOutbound,
    limits: deps.toolLimits,
    sandboxQuotaMb: plan.settings.sandboxQuotaMb,
    playerId: plan.playerId,
    conversationId: conversation.id,
    npc: speaker.npc,
    others: plan.participants.filter((p) => p.id !== speaker.npc.id).map((p) => p.name),
    question: handoff?.message ?? plan.playerMessage.text,
    shareLimits: {
      maxBytes: plan.settings.maxAttachmentMb * 1024 * 1024,
      types: plan.settings.attachmentTypes,
      playerBytes: plan.settings.playerAttachmentMb * 1024 * 1024,
    },
  });
  toolsReady.catch(() => {});
  const message = replyId
    ? { id: replyId }
    : await insertNpcMessage(sql, {
        conversationId: conversation.id,
        npc: speaker.npc,
        provider: speaker.resolved.provider,
        model: speaker.resolved.model,
        instanceId: deps.instanceId,
      });
  const start: StartFrame = {
    type: 'start',
    messageId: message.id,
    playerMessageId: plan.playerMessage.id,
    npc: { id: speaker.npc.id, name: speaker.npc.name },
    provider: speaker.resolved.provider,
    model: speaker.resolved.model,
  };
  let parts: Part[] = [];
  // Others may follow the reply from here on (another tab, another instance): they read its Parts as they stand.
  plan.track?.(start, () => parts);
  emit(start);

  let status: EndStatus = 'complete';
  let error: string | null = null;
  let usage: Usage | null = null;
  let stepUsage: Usage | null = null;
  // Cache writes are priced, not stored: Usage keeps the four counts every Provider reports.
  let cacheWrites: number | null = null;
  let closeTools = async () => {};
  let releaseAttachments = () => {};
  // What was sent, in characters: a reply that ends before the Provider reports usage is charged an estimate.
  let promptChars = 0;
  // The Provider's final count arrived (a `finish`); a step has begun and not been counted; what it streamed.
  let finished = false;
  // The SDK's `finish` came at all: a stream that just stops has none (issue 27).
  let ended = false;
  let stepOpen = false;
  let sinceStep = 0;
  // Failures before the Provider is called are ours, not the Provider's: they are reported as such.
  let errorCode:
    | Failure['code']
    | LimitReached['code']
    | BudgetSpent['code']
    | 'INTERNAL'
    | 'PROVIDER_TIMEOUT' = 'INTERNAL';
  // Tokens of this reply's steps charged as each ended (finishMessage charges only the rest); set once a step
  // found the day's budget spent, which ends the reply there.
  let charged = 0;
  // Whether the Provider was called at all: a reply ended before (its setup failed, the budget was spent) costs
  // nothing.
  let called = false;
  let overBudget: BudgetSpent | undefined;
  const { provider: providerId, model: modelId } = speaker.resolved;
  // The Player's Stop (or the server's shutdown) and the reply's own bounds both end the Provider call.
  const bounds = new ReplyBounds(deps.replyLimits ?? DEFAULT_REPLY_LIMITS);
  const callSignal = AbortSignal.any([signal, bounds.signal]);
  const fail = (f: Failure | LimitReached | BudgetSpent) => {
    status = 'failed';
    errorCode = f.code;
    error = f.message;
  };
  try {
    const tools = await toolsReady;
    closeTools = tools.close;
    const context = await assembleContext(deps, {
      conversation,
      playerId: plan.playerId,
      participants: plan.participants,
      speaker,
      settings: plan.settings,
      tail: await tail,
      tools,
      handoff,
      signal: callSignal,
      budget,
      user: plan.playerName,
    });
    releaseAttachments = context.release;
    // Asked again here, not only when the turn began: a hand-over, or the summary calls just made, may have
    // spent the rest.
    overBudget = await budget.spent();
    if (overBudget) throw overBudget;
    promptChars =
      context.system.head.length + context.system.tail.length + JSON.stringify(context.messages).length;
    errorCode = 'PROVIDER_ERROR';
    called = true;
    // A Model known not to think is not asked to (some Providers refuse the request); the editor says so.
    const think =
      speaker.npc.thinking && thinkingSupport(speaker.kind, providerId, modelId) !== 'unsupported';
    const result = streamText({
      // Before the first token, the SDK retries 408, 409, 429 and 5xx twice with backoff (2 s, then 4 s, or
      // the Provider's Retry-After up to a minute); after it, a failure is the reply's, said plainly.
      maxRetries: 2,
      model: speaker.model,
      instructions: instructionsFor(speaker.kind, context.system),
      messages: context.messages,
      // Only a card's post-history instructions come as a system message after the history (turn/prompt.ts).
      allowSystemInMessages: context.messages.some((m) => m.role === 'system'),
      tools: tools.tools,
      // A hand-over ends the reply: the named NPC answers next. Before each further step the one just ended is
      // charged and the budgets asked; spent, the reply ends there (all conditions are evaluated each time).
      stopWhen: [
        isStepCount(deps.maxSteps ?? 8),
        hasToolCall(MESSAGE_NPC),
        async ({ steps }) => {
          const u = steps.at(-1)?.usage;
          const tokens = (u?.inputTokens ?? 0) + (u?.outputTokens ?? 0);
          overBudget = await budget.charge(tokens);
          charged += tokens;
          return overBudget !== undefined;
        },
      ],
      abortSignal: callSignal,
      reasoning: think ? 'medium' : undefined,
      // The Model's own output limit (never the Provider's smaller fallback), or the Village's lower one.
      maxOutputTokens: outputTokens(
        outputLimit(speaker.kind, providerId, modelId),
        plan.settings.maxOutputTokens,
        think && speaker.kind === 'anthropic',
      ),
      providerOptions: thinkingOptions(speaker.kind, think),
      timeout: { chunkMs: deps.chunkTimeoutMs, firstChunkMs: deps.chunkTimeoutMs },
      // Errors arrive as stream parts and are handled below; the SDK's default would log them again.
      onError: () => {},
    });
    for await (const chunk of result.stream) {
      // Made storable as it arrives (no NUL, no half surrogate pairs): see parts/wellFormed.ts.
      const raw =
        chunk.type === 'reasoning-start' ? sectionBreak(parts) : toFragment(chunk, tools.descriptions);
      const fragment = raw && wellFormed(raw);
      if (fragment) {
        bounds.count(fragment);
        sinceStep += charsOf(fragment);
        parts = foldPart(parts, fragment);
        // A file the NPC shared is shown as a file Part after its call (only from our own share_file tool).
        const shared =
          fragment.type === 'tool' && fragment.state === 'done' && fragment.name === TOOL_NAMES.shareFile
            ? sharedFile(fragment.output)
            : undefined;
        if (shared) parts = foldPart(parts, shared);
        deps.checkpoints.update(message.id, parts);
        emit({ type: 'part', messageId: message.id, part: fragment });
        if (shared) emit({ type: 'part', messageId: message.id, part: shared });
      } else if (chunk.type === 'start-step') stepOpen = true;
      else if (chunk.type === 'finish-step') {
        // A step cut short stays open: it is charged an estimate, not its half figure (ADR 0032).
        if (counted(chunk.finishReason)) {
          stepUsage = addUsage(stepUsage, toUsage(chunk.usage));
          stepOpen = false;
          sinceStep = 0;
        }
      } else if (chunk.type === 'finish') {
        ended = true;
        finished = counted(chunk.finishReason);
        usage = finished ? toUsage(chunk.totalUsage) : stepUsage;
        if (finished) cacheWrites = chunk.totalUsage.inputTokenDetails?.cacheWriteTokens ?? null;
        // The reply ends the way the Provider ended it (issue 27); what came is kept on every path.
        const ending = status === 'complete' ? endingOf(chunk.finishReason) : 'complete';
        if (ending === 'truncated') status = 'truncated';
        else if (ending === 'unfinished') fail(unfinished(providerId));
        // The Provider ended the reply itself: a safety filter or a refusal, said as such.
        else if (ending === 'blocked')
          fail(
            blocked(
              providerId,
              parts.some((p) => p.type === 'text' && p.text.trim() !== ''),
            ),
          );
      } else if (chunk.type === 'abort') {
        // Our signal is the Player stopping; any other abort is the SDK's own timeout on a silent Provider.
        if (signal.aborted) status = endedBy(signal);
        else if (bounds.reached) fail(bounds.reached);
        else {
          status = 'failed';
          errorCode = 'PROVIDER_TIMEOUT';
          error = `The Provider sent nothing for ${Math.round(deps.chunkTimeoutMs / 1000)} s, so the reply was ended.`;
        }
      } else if (chunk.type === 'error') fail(describeFailure(chunk.error, providerId, modelId));
    }
    if (signal.aborted && status === 'complete') status = endedBy(signal);
    else if (bounds.reached && status === 'complete') fail(bounds.reached);
    else if (overBudget && status === 'complete') fail(overBudget);
    else if (!ended && status === 'complete') fail(unfinished(providerId));
  } catch (e) {
    // AI SDK 7 throws out of the loop when the Provider's socket breaks mid-stream.
    if (e === overBudget && overBudget) fail(overBudget);
    else if (signal.aborted) status = endedBy(signal);
    else if (bounds.reached) fail(bounds.reached);
    else if (errorCode === 'INTERNAL') {
      status = 'failed';
      error = 'The reply could not be prepared. Nothing was lost; try again.';
      deps.log('turn setup failed', e);
    } else fail(describeFailure(e, providerId, modelId));
  } finally {
    bounds.close();
    releaseAttachments();
    await closeTools();
    await deps.checkpoints.settle(message.id);
    usage ??= stepUsage;
    if (status === 'interrupted')
      error = 'The server restarted while this reply was being written; what had arrived is kept.';
    const cost = costUsd(speaker.kind, speaker.resolved.provider, speaker.resolved.model, usage, cacheWrites);
    // Usage stays as reported (null when it was not: ADR 0003); the daily budget is charged an estimate for
    // what was not, at four characters a token: the whole reply when nothing was reported, else the step cut
    // short (its prompt and what it streamed) when the reply ended inside a step the Provider never counted.
    const reported = usage?.inputTokens != null || usage?.outputTokens != null;
    const spent = !called
      ? null
      : !reported
        ? Math.ceil((promptChars + JSON.stringify(parts).length) / 4)
        : !finished && stepOpen
          ? Math.ceil((promptChars + sinceStep) / 4)
          : null;
    const shared = parts.filter((p) => p.type === 'file').map((p) => p.id);
    if (shared.length)
      await linkShared(sql, conversation.id, message.id, shared).catch((e) =>
        deps.log('shared files not linked', e),
      );
    await finishMessage(sql, message.id, {
      parts,
      status,
      error,
      usage,
      costUsd: cost,
      estimatedTokens: spent,
      chargedTokens: charged,
    });
  }
  if (status === 'failed') {
    emit({
      type: 'error',
      messageId: message.id,
      // Ours when the reply failed before the Provider was called (its tools or context could not be made).
      code: errorCode,
      message: error ?? 'The Provider failed.',
    });
  }
  emit({ type: 'finish', messageId: message.id, status, usage });
  return { messageId: message.id, status, handoff: handoffIn(parts) };
}

/** In "each" mode, the first NPC after `current` (in joining order, wrapping round) not yet heard this turn. */
function nextToAnswer(
  plan: TurnPlan,
  conversation: Conversation,
  current: string,
  answered: ReadonlySet<string>,
): Npc | undefined {
  if (conversation.replyMode !== 'each' || plan.participants.length < 2) return undefined;
  const at = plan.participants.findIndex((p) => p.id === current);
  const order = [...plan.participants.slice(at + 1), ...plan.participants.slice(0, Math.max(0, at))];
  return order.find((p) => !answered.has(p.id));
}

/** The hand-over a reply ended with, if any: a completed message_npc call. */
function handoffIn(parts: Part[]): ReplyEnd['handoff'] {
  const call = parts.findLast((p) => p.type === 'tool' && p.name === MESSAGE_NPC && p.state === 'done');
  if (call?.type !== 'tool') return undefined;
  const input = call.input as { message?: string };
  const output = call.output as { handedTo?: string };
  return output?.handedTo && input?.message ? { npc: output.handedTo, message: input.message } : undefined;
}
