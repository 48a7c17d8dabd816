import type { TextStreamPart, ToolSet } from 'ai';
import type { Usage } from '../conversations/index.ts';
import {
  appendRun,
  type FilePart,
  type Frame,
  foldPart,
  type Part,
  wellFormed,
  wellFormedText,
} from '../parts/index.ts';
import { sharedFile, TOOL_NAMES } from '../tools/index.ts';
import { charsOf, type LimitReached, providerQuiet } from './bounds.ts';
import type { BudgetSpent } from './budget.ts';
import { counted, endingOf } from './endings.ts';
import { blocked, describeFailure, type Failure, unfinished } from './failures.ts';
import { addUsage, toFragment, toUsage } from './fragments.ts';
import { sectionBreak } from './thinking.ts';
import { partialInputs, settledCalls } from './unfinished.ts';

/**
 * One NPC reply as a reducer: what the Provider's stream does to it (`reduceReply`) and how it ends (`settle`),
 * with every rule of its status, error and usage here and no I/O; `runReply` (run.ts) does the calling, the
 * storing and the sending. The state is mutated in place and frames are handed to a callback: a delta costs
 * neither a copy of the state nor an array of frames (a reply is thousands of deltas).
 */

export type EndStatus = 'complete' | 'truncated' | 'stopped' | 'failed' | 'interrupted';

/** The error frame's code. Failures before the Provider is called are ours (`INTERNAL`), not the Provider's. */
export type ReplyErrorCode =
  | Failure['code']
  | LimitReached['code']
  | BudgetSpent['code']
  | 'INTERNAL'
  | 'PROVIDER_TIMEOUT'
  | 'STEP_LIMIT';

/**
 * What is kept of a call's arguments as streamed, before the call is whole: enough to show what the NPC had sent
 * when the reply is cut mid-call, and a bound on what a Model streaming one endless argument makes us hold.
 */
export const PARTIAL_INPUT_CHARS = 16_384;

/** Provider calls one reply may take, one per step: each step after the first answers the tool calls before it. */
export const MAX_STEPS = 8;

/**
 * Why our side ended the Provider call, when it did: the Player's Stop (`stopped`), the server's shutdown
 * (`interrupted`), or a bound of the reply (its length or its time).
 */
export type Halt = 'stopped' | 'interrupted' | LimitReached;

/** A stream part as the reducer reads it: the AI SDK's, with an `abort` told why (the reducer sees no signals). */
export type ReplyChunk =
  | Exclude<TextStreamPart<ToolSet>, { type: 'abort' }>
  | { type: 'abort'; halt: Halt | undefined }
  /** A file the Model made (a `file` or `reasoning-file` part), as kept (madeFiles.ts): its Part, where it came. */
  | { type: 'made-file'; part: FilePart };

/** How the reply's work ended, as `runReply` saw it. */
export type Cause =
  /** The Provider's stream ran out (with or without its `finish`); `halt` if our side had ended the call. */
  | { type: 'ended'; halt: Halt | undefined }
  /** Thrown: while the call was prepared, or out of the stream (AI SDK 7 throws when the socket breaks). */
  | { type: 'thrown'; error: unknown; halt: Halt | undefined }
  /** The day's budget was found spent before the Provider was called (ADR 0050). */
  | { type: 'budget'; spent: BudgetSpent };

export interface ReplyState {
  readonly messageId: string;
  /** The NPC's Provider and Model ids, as failures name them. */
  readonly provider: string;
  readonly model: string;
  /** The SDK's silence time-out, as the Player is told it. */
  readonly chunkTimeoutMs: number;
  /** The steps the reply may take (the call's `stopWhen`); one that used them all on tools did not finish. */
  readonly maxSteps: number;
  /** Steps ended so far, and the tool calls of the last step begun (the SDK goes on while a step calls tools). */
  steps: number;
  stepCalls: number;
  /** Arguments of calls not whole yet, as streamed (`PARTIAL_INPUT_CHARS` at most): kept if the reply ends first. */
  inputs: Map<string, string>;
  /** How many characters of each call not whole yet have streamed: in `chars` until the whole call replaces them. */
  streamed: Map<string, number>;
  /** MCP tools' own descriptions, kept on their calls (known once the tools are built). */
  descriptions: Record<string, string>;
  parts: Part[];
  status: EndStatus;
  error: { code: ReplyErrorCode; message: string } | null;
  /** The Provider's final count (its `finish`, when that counted), else null. */
  usage: Usage | null;
  /** The sum of the steps the Provider counted: the usage of a reply that ended before its final count. */
  stepUsage: Usage | null;
  /** Cache writes are priced, not stored: Usage keeps the four counts every Provider reports. */
  cacheWrites: number | null;
  /** The Provider was called at all: a reply ended before (its setup failed, the budget was spent) costs nothing. */
  called: boolean;
  /** What was sent, in characters: a reply that ends before the Provider reports usage is charged an estimate. */
  promptChars: number;
  /** The SDK's `finish` came at all: a stream that just stops has none (issue 27). */
  ended: boolean;
  /** The `finish` carried the Provider's final count. */
  finished: boolean;
  /** A step has begun and not been counted; what it streamed, in characters. */
  stepOpen: boolean;
  sinceStep: number;
  /**
   * What the reply holds, in characters (text and reasoning; tool calls and files as JSON, and the arguments of a
   * call still streaming): its bounds' count.
   */
  chars: number;
  /** Tokens of this reply's steps charged as each ended (the final write charges only the rest). */
  charged: number;
  /** Set once a step found the day's budget spent, which ends the reply there. */
  overBudget: BudgetSpent | undefined;
}

export function newReply(
  messageId: string,
  ids: { provider: string; model: string },
  chunkTimeoutMs: number,
  maxSteps = MAX_STEPS,
): ReplyState {
  return {
    messageId,
    provider: ids.provider,
    model: ids.model,
    chunkTimeoutMs,
    maxSteps,
    steps: 0,
    stepCalls: 0,
    inputs: new Map(),
    streamed: new Map(),
    descriptions: {},
    parts: [],
    status: 'complete',
    error: null,
    usage: null,
    stepUsage: null,
    cacheWrites: null,
    called: false,
    promptChars: 0,
    ended: false,
    finished: false,
    stepOpen: false,
    sinceStep: 0,
    chars: 0,
    charged: 0,
    overBudget: undefined,
  };
}

/** The Provider is about to be called with a prompt of `promptChars` characters. */
export function called(state: ReplyState, promptChars: number, descriptions: Record<string, string>): void {
  state.called = true;
  state.promptChars = promptChars;
  state.descriptions = descriptions;
}

/** A step ended and was charged (ADR 0050); `spent` when the day's budget is now spent. */
export function stepCharged(state: ReplyState, tokens: number, spent: BudgetSpent | undefined): void {
  // Once spent, the reply stays over budget: a later step's charge (a smaller one, or one the Village allowed)
  // does not undo it.
  state.overBudget ??= spent;
  state.charged += tokens;
}

/** What a finished step is charged: the tokens the Provider said it took. */
export const stepTokens = (u: { inputTokens?: number; outputTokens?: number } | undefined): number =>
  (u?.inputTokens ?? 0) + (u?.outputTokens ?? 0);

/** One stream part: folded into the Parts (each fragment handed on as a `part` frame), or a change of status. */
export function reduceReply(state: ReplyState, chunk: ReplyChunk, emit: (frame: Frame) => void): void {
  if (chunk.type === 'abort') {
    halted(state, chunk.halt);
    return;
  }
  if (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta') {
    addDelta(state, chunk.type === 'text-delta' ? 'text' : 'reasoning', chunk.text, emit);
    return;
  }
  if (chunk.type === 'made-file') {
    const fragment = wellFormed(chunk.part);
    if (fragment) addFragment(state, fragment, emit);
    return;
  }
  // A call's arguments as they stream are held, not sent: the whole call (`tool-call`) carries them parsed.
  if (chunk.type === 'tool-input-delta') {
    // Counted as they stream: a call's arguments that never end would otherwise grow without the reply's bound.
    state.chars += chunk.delta.length;
    state.streamed.set(chunk.id, (state.streamed.get(chunk.id) ?? 0) + chunk.delta.length);
    const sent = state.inputs.get(chunk.id) ?? '';
    if (sent.length < PARTIAL_INPUT_CHARS)
      state.inputs.set(chunk.id, (sent + chunk.delta).slice(0, PARTIAL_INPUT_CHARS));
    return;
  }
  if (chunk.type === 'tool-call') {
    state.inputs.delete(chunk.toolCallId);
    // The whole call is counted as its fragment: what streamed of it no longer is.
    state.chars -= state.streamed.get(chunk.toolCallId) ?? 0;
    state.streamed.delete(chunk.toolCallId);
    // The SDK takes another step for the calls it runs, not for those the Provider ran itself.
    if (!chunk.providerExecuted) state.stepCalls++;
  }
  // Made storable as it arrives (no NUL, no half surrogate pairs): see parts/wellFormed.ts.
  const raw =
    chunk.type === 'reasoning-start' ? sectionBreak(state.parts) : toFragment(chunk, state.descriptions);
  const fragment = raw && wellFormed(raw);
  if (fragment) addFragment(state, fragment, emit);
  else if (chunk.type === 'start-step') {
    state.stepOpen = true;
    state.stepCalls = 0;
  } else if (chunk.type === 'finish-step') {
    state.steps++;
    // A step cut short stays open: it is charged an estimate, not its half figure (ADR 0032).
    if (counted(chunk.finishReason)) {
      state.stepUsage = addUsage(state.stepUsage, toUsage(chunk.usage));
      state.stepOpen = false;
      state.sinceStep = 0;
    }
  } else if (chunk.type === 'finish') finish(state, chunk);
  else if (chunk.type === 'error') fail(state, describeFailure(chunk.error, state.provider, state.model));
}

/**
 * A text or reasoning delta, most of a stream: the same as addFragment would do with its fragment, without the
 * generic paths (no fragment built only to be read again, no deep well-formedness walk, no share_file check).
 */
function addDelta(
  state: ReplyState,
  type: 'text' | 'reasoning',
  raw: string,
  emit: (frame: Frame) => void,
): void {
  const text = wellFormedText(raw);
  state.chars += text.length;
  state.sinceStep += text.length;
  state.parts = appendRun(state.parts, type, text);
  emit({ type: 'part', messageId: state.messageId, part: { type, text } });
}

function addFragment(state: ReplyState, fragment: Part, emit: (frame: Frame) => void): void {
  const chars = charsOf(fragment);
  state.chars += chars;
  state.sinceStep += chars;
  state.parts = foldPart(state.parts, fragment);
  // A file the NPC shared is shown as a file Part after its call (only from our own share_file tool).
  const shared =
    fragment.type === 'tool' && fragment.state === 'done' && fragment.name === TOOL_NAMES.shareFile
      ? sharedFile(fragment.output)
      : undefined;
  if (shared) state.parts = foldPart(state.parts, shared);
  emit({ type: 'part', messageId: state.messageId, part: fragment });
  if (shared) emit({ type: 'part', messageId: state.messageId, part: shared });
}

/** The SDK's `finish`: the reply ends the way the Provider ended it (ADR 0051); what came is kept on every path. */
function finish(state: ReplyState, chunk: Extract<ReplyChunk, { type: 'finish' }>): void {
  state.ended = true;
  state.finished = counted(chunk.finishReason);
  state.usage = state.finished ? toUsage(chunk.totalUsage) : state.stepUsage;
  if (state.finished) state.cacheWrites = chunk.totalUsage.inputTokenDetails?.cacheWriteTokens ?? null;
  const ending = state.status === 'complete' ? endingOf(chunk.finishReason) : 'complete';
  if (ending === 'truncated') state.status = 'truncated';
  else if (ending === 'unfinished') fail(state, unfinished(state.provider));
  // The Provider ended the reply itself: a safety filter or a refusal, said as such.
  else if (ending === 'blocked') {
    const hadText = state.parts.some((p) => p.type === 'text' && p.text.trim() !== '');
    fail(state, blocked(state.provider, hadText));
  }
}

/** The SDK's `abort`: ours (Stop, shutdown, a bound), or else the SDK's own time-out on a silent Provider. */
function halted(state: ReplyState, halt: Halt | undefined): void {
  if (typeof halt === 'string') state.status = halt;
  else if (halt) fail(state, halt);
  else fail(state, providerQuiet(state.chunkTimeoutMs));
}

function fail(state: ReplyState, failure: { code: ReplyErrorCode; message: string }): void {
  state.status = 'failed';
  state.error = { code: failure.code, message: failure.message };
}

/** How a reply ends: its row's last write, and the frames sent once that is stored. */
export interface Settled {
  status: EndStatus;
  /** For the row (an interrupted reply says why, with no frame). */
  error: string | null;
  /** Its code when the reply failed (`INTERNAL`: its setup did, before any Provider call). */
  code: ReplyErrorCode | null;
  /** As the Provider reported it, null when it did not (ADR 0003). */
  usage: Usage | null;
  /** Charged to the budgets beyond the usage: what the Provider did not count (ADR 0032). */
  estimatedTokens: number | null;
  chargedTokens: number;
  /** An `error` frame when it failed, then its `finish`. */
  frames: Frame[];
}

const RESTARTED = 'The server restarted while this reply was being written; what had arrived is kept.';
const SETUP_FAILED = 'The reply could not be prepared. Nothing was lost; try again.';

/** The reply has ended for `cause`: its final status, error and usage, and what the budgets are charged. */
export function settle(state: ReplyState, cause: Cause): Settled {
  if (cause.type === 'budget') fail(state, cause.spent);
  else if (cause.type === 'thrown') thrown(state, cause.error, cause.halt);
  // Ran out: only a reply nothing else had ended yet is ended here, in this order.
  else if (state.status === 'complete') {
    const { halt } = cause;
    if (typeof halt === 'string') state.status = halt;
    else if (halt) fail(state, halt);
    else if (state.overBudget) fail(state, state.overBudget);
    else if (!state.ended) fail(state, unfinished(state.provider));
    else if (stepsRanOut(state)) fail(state, stepLimit(state.maxSteps));
  }
  const usage = state.usage ?? state.stepUsage;
  state.usage = usage;
  const failed = state.status === 'failed';
  const code = failed ? (state.error?.code ?? 'PROVIDER_ERROR') : null;
  const cut = partialInputs(state.parts, state.inputs);
  state.inputs.clear();
  const ended = settledCalls(cut.parts, state.status);
  state.parts = ended.parts;
  const frames: Frame[] = [...cut.fragments, ...ended.fragments].map((part) => ({
    type: 'part',
    messageId: state.messageId,
    part,
  }));
  if (failed)
    frames.push({
      type: 'error',
      messageId: state.messageId,
      code: code!,
      message: state.error?.message ?? 'The Provider failed.',
    });
  frames.push({ type: 'finish', messageId: state.messageId, status: state.status, usage });
  return {
    status: state.status,
    error: state.status === 'interrupted' ? RESTARTED : (state.error?.message ?? null),
    code,
    usage,
    estimatedTokens: estimate(state, usage),
    chargedTokens: state.charged,
    frames,
  };
}

/** The hand-over a reply ended with, if any: a completed message_npc call (the turn loop starts that NPC next). */
export function handoffIn(parts: Part[]): { npc: string; message: string } | undefined {
  const call = parts.findLast(
    (p) => p.type === 'tool' && p.name === TOOL_NAMES.messageNpc && p.state === 'done',
  );
  if (call?.type !== 'tool') return undefined;
  const input = call.input as { message?: string };
  const output = call.output as { handedTo?: string };
  return output?.handedTo && input?.message ? { npc: output.handedTo, message: input.message } : undefined;
}

/**
 * The reply used every step it may take and its last still called tools: the SDK would have taken another, so the
 * Model did not finish (only a hand-over ends a reply on a tool call). Counted from the calls, not the Provider's
 * finish reason: some report "stop" for a step that called tools. Said, not stopped silently: it reads like one
 * that stopped mid-thought otherwise.
 */
function stepsRanOut(state: ReplyState): boolean {
  return state.stepCalls > 0 && state.steps >= state.maxSteps && handoffIn(state.parts) === undefined;
}

const stepLimit = (steps: number) => ({
  code: 'STEP_LIMIT' as const,
  message: `The NPC used all ${steps} of its steps on tools without finishing its answer, so the reply stops here. What it did is kept; reply to let it go on.`,
});

function thrown(state: ReplyState, error: unknown, halt: Halt | undefined): void {
  if (typeof halt === 'string') state.status = halt;
  else if (halt) fail(state, halt);
  else if (!state.called) fail(state, { code: 'INTERNAL', message: SETUP_FAILED });
  else fail(state, describeFailure(error, state.provider, state.model));
}

/**
 * Usage stays as reported (null when it was not: ADR 0003); the daily budget is charged an estimate for what
 * was not, at four characters a token: the whole reply when nothing was reported, else the step cut short (its
 * prompt and what it streamed) when the reply ended inside a step the Provider never counted.
 */
function estimate(state: ReplyState, usage: Usage | null): number | null {
  if (!state.called) return null;
  const reported = usage?.inputTokens != null || usage?.outputTokens != null;
  if (!reported) return Math.ceil((state.promptChars + JSON.stringify(state.parts).length) / 4);
  return !state.finished && state.stepOpen ? Math.ceil((state.promptChars + state.sinceStep) / 4) : null;
}
