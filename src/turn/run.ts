import { experimental_streamTextLowMemory as streamTextOnce } from 'ai';
import type { booksOf } from '../cards/index.ts';
import {
  type Conversation,
  getConversation,
  type readHistoryTail,
  replyStored,
} from '../conversations/index.ts';
import { answered, connectionLost } from '../db/index.ts';
import type { Frame } from '../parts/index.ts';
import { SHUTDOWN } from '../replies/index.ts';
import type { TurnTools } from '../tools/index.ts';
import type { Npc } from '../village/index.ts';
import { DEFAULT_REPLY_LIMITS, ReplyBounds } from './bounds.ts';
import { TurnBudget } from './budget.ts';
import { callOptions, type ProviderCall } from './call.ts';
import { CommitUnanswered } from './commitWait.ts';
import { assembleContext, type Handoff } from './context.ts';
import type { TurnDeps, TurnPlan } from './deps.ts';
import { promptChars } from './history.ts';
import { keepMadeFile } from './madeFiles.ts';
import {
  type Cause,
  called,
  type EndStatus,
  handoffIn,
  newReply,
  type ReplyState,
  reduceReply,
  settle,
} from './reply.ts';
import { insertReply, prepare, startFrame, store } from './replyIO.ts';
import { titleDue, titleFirstExchange } from './title.ts';

export type { Speaker, TurnDeps, TurnPlan } from './deps.ts';

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
  const budget = new TurnBudget(deps.sql, plan.playerId, plan.settings, plan.spentToday);
  // Who has answered this turn (each in turn: every NPC once, in the order they joined).
  const answered = new Set<string>();
  for (let hops = 0; ; hops++) {
    // The first reply's row was written with the claim; each hand-over writes its own.
    const replyId = hops === 0 ? plan.replyId : undefined;
    // What follows a reply that ended so, decided once: used by its last write (when nothing follows, that write
    // releases the claim too, one commit fewer per turn) and by this loop after it.
    const current = speaker.npc.id;
    const titleFollows = (status: EndStatus) =>
      hops === 0 && status === 'complete' && !signal.aborted && titleDue(deps, plan);
    // No hand-over: in a Party whose Conversation asks each NPC in turn, the next one who has not answered yet.
    const nextInTurn = () => nextToAnswer(plan, conversation, current, new Set(answered).add(current));
    const nothingNext = (status: EndStatus, handedOver: boolean) =>
      status !== 'complete' || signal.aborted || (!handedOver && !nextInTurn());
    const end = await runReply(
      deps,
      { ...plan, conversation, speaker },
      replyId,
      handoff,
      budget,
      signal,
      emit,
      (status, handedOver) => nothingNext(status, handedOver) && !titleFollows(status),
    );
    if (titleFollows(end.status)) await titleFirstExchange(deps, plan, end.messageId, budget, signal);
    answered.add(current);
    if (nothingNext(end.status, end.handoff !== undefined)) return;
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
    const next = end.handoff ? plan.participants.find((p) => p.name === end.handoff!.npc) : nextInTurn();
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
  endsTurn: (status: EndStatus, handedOver: boolean) => boolean,
): Promise<ReplyEnd> {
  // The first reply's claim may still be flushing (ADR 0099): its start frame goes first, its reads wait for it.
  const committed = replyId ? plan.committed : undefined;
  const early = committed ? undefined : prepare(deps, plan, handoff);
  const message = replyId ? { id: replyId } : await insertReply(deps, plan);
  const state = newReply(message.id, plan.speaker.resolved, deps.chunkTimeoutMs, deps.maxSteps);
  const start = startFrame(plan, message.id);
  // Others may follow the reply from here on (another tab, another instance): they read its Parts as they stand.
  plan.track?.(start, () => state.parts);
  emit(start);
  if (committed && !(await stored(deps, plan, committed, message.id, emit)))
    return { messageId: message.id, status: 'failed' };
  const { tail, books, toolsReady } = early ?? prepare(deps, plan, handoff);
  // The Player's Stop (or the server's shutdown) and the reply's own bounds both end the Provider call.
  const bounds = new ReplyBounds(deps.replyLimits ?? DEFAULT_REPLY_LIMITS);
  const call: ProviderCall = {
    signal: AbortSignal.any([signal, bounds.signal]),
    halt: () => (signal.aborted ? endedBy(signal) : bounds.reached),
    onFrame: (frame) => {
      if (frame.type === 'part') {
        bounds.grown(state.chars, state.parts.length);
        deps.checkpoints.update(message.id, state.parts);
      }
      emit(frame);
    },
    closeTools: async () => {},
    releaseAttachments: () => {},
  };
  let cause: Cause;
  try {
    cause = await streamReply(deps, plan, { state, call, bounds, budget, handoff, tail, books, toolsReady });
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
  const handedTo = handoffIn(state.parts);
  await store(deps, plan, state, end, endsTurn(end.status, handedTo !== undefined));
  for (const frame of end.frames) emit(frame);
  return { messageId: message.id, status: end.status, handoff: handedTo };
}

/**
 * Waits for the claim behind a start frame already sent to be stored. A COMMIT refused by the database stored
 * nothing; one whose answer was lost with its connection may have been made, and the reply's row says which. Not
 * stored, the reply ends before anything is asked of the Provider, with an error that tells the web app to give
 * the Player their words back; there is no claim to release.
 */
async function stored(
  deps: TurnDeps,
  plan: TurnPlan,
  committed: Promise<void>,
  messageId: string,
  emit: (frame: Frame) => void,
): Promise<boolean> {
  const failure = await committed.then(
    () => undefined,
    (e: unknown) => ({ e }),
  );
  if (!failure) return true;
  const made =
    failure.e instanceof CommitUnanswered || connectionLost(failure.e)
      ? await lookUp(deps, plan.conversation.id, messageId)
      : false;
  if (made) {
    deps.log('turn claim stored, though its COMMIT went unanswered', failure.e);
    return true;
  }
  deps.log('turn claim not stored', failure.e);
  // Not stored, there is nothing to release. Not known, a release now could free another turn's claim: it is
  // settled later, once the database can tell (undecided.ts).
  plan.endTurn?.released([]);
  if (made === undefined) plan.endTurn?.undecided?.();
  emit({
    type: 'error',
    messageId,
    code: 'NOT_STORED',
    message:
      made === false
        ? 'Your Message could not be saved, so no NPC was asked. Send it again.'
        : 'The database could not be reached, so no NPC was asked, and your Message may not have been saved. Reload, and send it again if it is missing.',
  });
  return false;
}

/**
 * Whether a claim whose COMMIT went unanswered was stored, looked up, and asked again once a moment later: a pool's
 * first query after a lost connection can fail with that connection's stale error (porsager/postgres#1215).
 * Undefined when it cannot be told.
 */
async function lookUp(deps: TurnDeps, conversationId: string, messageId: string) {
  for (const wait of [0, 500]) {
    if (wait) await new Promise((r) => setTimeout(r, wait));
    // Bounded: its own statements wait on a database that hangs as the COMMIT did (a stalled disk, a full pool).
    const made = await answered(replyStored(deps.sql, conversationId, messageId), 10_000).catch(
      () => undefined,
    );
    if (made !== undefined) return made;
  }
  return undefined;
}

/** Prepares the call (tools, context, the budget asked again), calls the Provider and reduces its stream. */
async function streamReply(
  deps: TurnDeps,
  plan: TurnPlan,
  r: {
    state: ReplyState;
    call: ProviderCall;
    bounds: ReplyBounds;
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
  called(state, system.head.length + system.tail.length + promptChars(messages), tools.descriptions);
  const withTools = Object.keys(tools.tools).length > 0;
  // One consumer (this loop) and no result promises read: the single-consumer form, which neither tees every
  // part into a second branch kept for later readers nor gathers the text a second time.
  const result = streamTextOnce(callOptions(deps, plan, context, withTools ? tools.tools : undefined, r));
  const { bounds } = r;
  if (!withTools) bounds.watchQuiet(deps.chunkTimeoutMs);
  let made = 0;
  for await (const chunk of result.stream) {
    // As the SDK's clock: Model output, from its first on (before it, the SDK's first-chunk time runs).
    if (OUTPUT[chunk.type]) bounds.heard();
    if (chunk.type === 'file' || chunk.type === 'reasoning-file') {
      // Stored before the next part is read: the Parts keep the order the Model made them in.
      const thought = chunk.type === 'reasoning-file';
      const part = await keepMadeFile(deps, plan, state.messageId, ++made, chunk.file, thought);
      // Storing it is not the Provider's silence.
      bounds.heard();
      reduceReply(state, { type: 'made-file', part }, call.onFrame);
      continue;
    }
    reduceReply(state, chunk.type === 'abort' ? { type: 'abort', halt: call.halt() } : chunk, call.onFrame);
    // A call's streaming arguments send no frame (onFrame checks the bound for the rest).
    if (chunk.type === 'tool-input-delta') bounds.grown(state.chars, state.parts.length);
  }
  return { type: 'ended', halt: call.halt() };
}

/** The stream parts of a call without tools that are the Model's output: what restarts its quiet time. */
const OUTPUT: Partial<Record<string, true>> = {
  'text-delta': true,
  'reasoning-delta': true,
  file: true,
  'reasoning-file': true,
};

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
