import {
  hasToolCall,
  isStepCount,
  type LanguageModel,
  type ModelMessage,
  streamText,
  type ToolSet,
} from 'ai';
import { booksOf } from '../cards/index.ts';
import type { ProviderKind } from '../config.ts';
import {
  type Conversation,
  finishMessage,
  getConversation,
  insertNpcMessage,
  linkShared,
  type Message,
  messageText,
  readHistoryTail,
} from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import type { Outbound } from '../outbound/index.ts';
import type { Frame, Part, StartFrame } from '../parts/index.ts';
import { SHUTDOWN } from '../replies/index.ts';
import { buildTurnTools, MESSAGE_NPC, type ToolLimits, type TurnTools } from '../tools/index.ts';
import {
  costUsd,
  type Npc,
  outputLimit,
  type ResolvedModel,
  thinkingSupport,
  type VillageSettings,
} from '../village/index.ts';
import { DEFAULT_REPLY_LIMITS, ReplyBounds, type ReplyLimits } from './bounds.ts';
import { TurnBudget } from './budget.ts';
import type { CheckpointBatch } from './checkpoint.ts';
import { assembleContext, type Handoff } from './context.ts';
import { outputTokens } from './endings.ts';
import { instructionsFor } from './prompt.ts';
import {
  type Cause,
  called,
  type EndStatus,
  type Halt,
  newReply,
  type ReplyState,
  reduceReply,
  type Settled,
  settle,
  stepCharged,
  stepTokens,
} from './reply.ts';
import { telemetryFor } from './telemetry.ts';
import { thinkingOptions } from './thinking.ts';
import { summariseTitle } from './title.ts';

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
  /** After a first exchange, ask its Model for a short title (title.ts); off: the first Message's words. */
  summariseTitles?: boolean;
  /** The AI SDK's OpenTelemetry spans on every Provider call (telemetry.ts). */
  telemetry?: boolean;
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

const endedBy = (signal: AbortSignal): 'interrupted' | 'stopped' =>
  signal.reason === SHUTDOWN ? 'interrupted' : 'stopped';

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
    if (hops === 0 && end.status === 'complete' && !signal.aborted)
      await titleFirstExchange(deps, plan, end, budget, signal);
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
 * A Conversation's first exchange gets a title summarised by the Model that answered (not the scripted demo,
 * which has nothing to say about it). It never fails the turn: the first Message's words stay the title.
 */
async function titleFirstExchange(
  deps: TurnDeps,
  plan: TurnPlan,
  end: ReplyEnd,
  budget: TurnBudget,
  signal: AbortSignal,
): Promise<void> {
  const { speaker, playerMessage } = plan;
  if (!deps.summariseTitles || speaker.kind === 'demo' || playerMessage.parentId !== null) return;
  try {
    const replyText = await messageText(deps.sql, end.messageId);
    await summariseTitle({
      sql: deps.sql,
      model: speaker.model,
      budget,
      conversationId: plan.conversation.id,
      playerText: playerMessage.text,
      npcName: speaker.npc.name,
      replyText: replyText ?? '',
      signal,
      telemetry: deps.telemetry,
    });
  } catch (e) {
    deps.log(
      `title for conversation ${plan.conversation.id} not summarised`,
      e instanceof Error ? e.message : e,
    );
  }
}

/**
 * One NPC reply, as the frames of the SSE stream, handed to `emit` as they come (a callback, not an async
 * generator: a generator layer costs promise hops on every delta). Every exit path (clean finish, the Player
 * leaving, a Provider error or a broken socket) persists what had arrived, with usage when the Provider
 * reported it (ADR 0003). The caller stops a reply by aborting `signal`; the loop unwinds at the next stream
 * part and still folds and stores everything produced until then. Only the I/O is here: what each stream part
 * and each ending mean for the reply is reply.ts's.
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
  const { tail, books, toolsReady } = prepare(deps, plan, handoff);
  const message = replyId ? { id: replyId } : await insertReply(deps, plan);
  const state = newReply(message.id, plan.speaker.resolved, deps.chunkTimeoutMs);
  const start = startFrame(plan, message.id);
  // Others may follow the reply from here on (another tab, another instance): they read its Parts as they stand.
  plan.track?.(start, () => state.parts);
  emit(start);
  // The Player's Stop (or the server's shutdown) and the reply's own bounds both end the Provider call.
  const bounds = new ReplyBounds(deps.replyLimits ?? DEFAULT_REPLY_LIMITS);
  const call: ProviderCall = {
    signal: AbortSignal.any([signal, bounds.signal]),
    halt: () => (signal.aborted ? endedBy(signal) : bounds.reached),
    onFrame: (frame) => {
      if (frame.type === 'part') {
        bounds.grown(state.chars);
        deps.checkpoints.update(message.id, state.parts);
      }
      emit(frame);
    },
    closeTools: async () => {},
    releaseAttachments: () => {},
  };
  let cause: Cause;
  try {
    cause = await streamReply(deps, plan, { state, call, budget, handoff, tail, books, toolsReady });
  } catch (e) {
    // AI SDK 7 throws out of the loop when the Provider's socket breaks mid-stream.
    cause = { type: 'thrown', error: e, halt: call.halt() };
  } finally {
    bounds.close();
    call.releaseAttachments();
    await call.closeTools();
    await deps.checkpoints.settle(message.id);
  }
  const end = settle(state, cause);
  if (end.code === 'INTERNAL' && cause.type === 'thrown') deps.log('turn setup failed', cause.error);
  await store(deps, plan, state, end);
  for (const frame of end.frames) emit(frame);
  return { messageId: message.id, status: end.status, handoff: handoffIn(state.parts) };
}

/** The Provider call of one reply: how it is ended, where its frames go, what to let go of when it ends. */
interface ProviderCall {
  signal: AbortSignal;
  /** Why our side ended the call, if it did (asked when the stream aborts or ends). */
  halt: () => Halt | undefined;
  onFrame: (frame: Frame) => void;
  closeTools: () => Promise<void>;
  releaseAttachments: () => void;
}

/**
 * History and the speaker's lorebooks are read and the Tool set built while the reply's row is inserted:
 * history excludes rows still streaming, so the two never race. All are awaited later (together, one round
 * trip instead of one after another); the catches only keep an early failure from going unhandled.
 */
function prepare(deps: TurnDeps, plan: TurnPlan, handoff: Handoff | undefined) {
  const { conversation, speaker, settings } = plan;
  const tail = readHistoryTail(deps.sql, conversation.id, conversation.summaryThrough);
  tail.catch(() => {});
  const books = booksOf(deps.sql, speaker.npc.id);
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
    shareLimits: {
      maxBytes: settings.maxAttachmentMb * 1024 * 1024,
      types: settings.attachmentTypes,
      playerBytes: settings.playerAttachmentMb * 1024 * 1024,
    },
  });
  toolsReady.catch(() => {});
  return { tail, books, toolsReady };
}

/** A hand-over's reply row (the first reply's was written with the claim). */
function insertReply(deps: TurnDeps, plan: TurnPlan) {
  const { speaker } = plan;
  return insertNpcMessage(deps.sql, {
    conversationId: plan.conversation.id,
    npc: speaker.npc,
    provider: speaker.resolved.provider,
    model: speaker.resolved.model,
    instanceId: deps.instanceId,
  });
}

function startFrame(plan: TurnPlan, messageId: string): StartFrame {
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

/** Prepares the call (tools, context, the budget asked again), calls the Provider and reduces its stream. */
async function streamReply(
  deps: TurnDeps,
  plan: TurnPlan,
  r: {
    state: ReplyState;
    call: ProviderCall;
    budget: TurnBudget;
    handoff: Handoff | undefined;
    tail: ReturnType<typeof readHistoryTail>;
    books: ReturnType<typeof booksOf>;
    toolsReady: Promise<TurnTools>;
  },
): Promise<Cause> {
  const { state, call, budget } = r;
  // The budgets are asked before the call (ADR 0050). Asked now, while the context is assembled, rather than
  // after it (a round trip less before the Provider is called); asked again after it only if summary calls
  // were made (and charged) meanwhile.
  const asked = budget.spent();
  asked.catch(() => {});
  const tools = await r.toolsReady;
  call.closeTools = tools.close;
  const context = await assembleContext(deps, {
    conversation: plan.conversation,
    playerId: plan.playerId,
    participants: plan.participants,
    speaker: plan.speaker,
    settings: plan.settings,
    tail: await r.tail,
    books: await r.books,
    tools,
    handoff: r.handoff,
    signal: call.signal,
    budget,
    user: plan.playerName,
  });
  call.releaseAttachments = context.release;
  // Asked again here, not only when the turn began: a hand-over, or the summary calls just made, may have
  // spent the rest.
  const spent = context.summarised ? await budget.spent() : await asked;
  if (spent) return { type: 'budget', spent };
  const { system, messages } = context;
  called(
    state,
    system.head.length + system.tail.length + JSON.stringify(messages).length,
    tools.descriptions,
  );
  const result = streamText(callOptions(deps, plan, context, tools.tools, r));
  for await (const chunk of result.stream)
    reduceReply(state, chunk.type === 'abort' ? { type: 'abort', halt: call.halt() } : chunk, call.onFrame);
  return { type: 'ended', halt: call.halt() };
}

function callOptions(
  deps: TurnDeps,
  plan: TurnPlan,
  context: { system: { head: string; tail: string }; messages: ModelMessage[] },
  tools: ToolSet,
  r: { state: ReplyState; call: ProviderCall; budget: TurnBudget },
): Parameters<typeof streamText>[0] {
  const { speaker } = plan;
  const { provider: providerId, model: modelId } = speaker.resolved;
  // A Model known not to think is not asked to (some Providers refuse the request); the editor says so.
  const think = speaker.npc.thinking && thinkingSupport(speaker.kind, providerId, modelId) !== 'unsupported';
  return {
    // Before the first token, the SDK retries 408, 409, 429 and 5xx twice with backoff (2 s, then 4 s, or
    // the Provider's Retry-After up to a minute); after it, a failure is the reply's, said plainly.
    maxRetries: 2,
    model: speaker.model,
    instructions: instructionsFor(speaker.kind, context.system),
    messages: context.messages,
    // Only a card's post-history instructions come as a system message after the history (turn/prompt.ts).
    allowSystemInMessages: context.messages.some((m) => m.role === 'system'),
    tools,
    // A hand-over ends the reply: the named NPC answers next. Before each further step the one just ended is
    // charged and the budgets asked; spent, the reply ends there (all conditions are evaluated each time).
    stopWhen: [
      isStepCount(deps.maxSteps ?? 8),
      hasToolCall(MESSAGE_NPC),
      async ({ steps }) => {
        const tokens = stepTokens(steps.at(-1)?.usage);
        stepCharged(r.state, tokens, await r.budget.charge(tokens));
        return r.state.overBudget !== undefined;
      },
    ],
    abortSignal: r.call.signal,
    reasoning: think ? 'medium' : undefined,
    // The Model's own output limit (never the Provider's smaller fallback), or the Village's lower one.
    maxOutputTokens: outputTokens(
      outputLimit(speaker.kind, providerId, modelId),
      plan.settings.maxOutputTokens,
      think && speaker.kind === 'anthropic',
    ),
    providerOptions: thinkingOptions(speaker.kind, think),
    timeout: { chunkMs: deps.chunkTimeoutMs, firstChunkMs: deps.chunkTimeoutMs },
    telemetry: telemetryFor(deps.telemetry, 'agentsville.turn'),
    // Errors arrive as stream parts and are reduced; the SDK's default would log them again.
    onError: () => {},
  };
}

/** The reply's last write: its Parts, status, error and usage, what it cost, and the files it shared linked. */
async function store(deps: TurnDeps, plan: TurnPlan, state: ReplyState, end: Settled): Promise<void> {
  const { kind, resolved } = plan.speaker;
  const shared = state.parts.filter((p) => p.type === 'file').map((p) => p.id);
  if (shared.length)
    await linkShared(deps.sql, plan.conversation.id, state.messageId, shared).catch((e) =>
      deps.log('shared files not linked', e),
    );
  await finishMessage(deps.sql, state.messageId, {
    parts: state.parts,
    status: end.status,
    error: end.error,
    usage: end.usage,
    costUsd: costUsd(kind, resolved.provider, resolved.model, end.usage, state.cacheWrites),
    estimatedTokens: end.estimatedTokens,
    chargedTokens: end.chargedTokens,
  });
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
