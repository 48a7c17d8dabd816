import { isStepCount, type ModelMessage, type streamText, type ToolSet } from 'ai';
import type { Frame } from '../parts/index.ts';
import { MESSAGE_NPC } from '../tools/index.ts';
import { outputLimit, thinkingSupport } from '../village/index.ts';
import type { TurnBudget } from './budget.ts';
import type { TurnDeps, TurnPlan } from './deps.ts';
import { outputTokens } from './endings.ts';
import { instructionsFor } from './prompt.ts';
import { type Halt, type ReplyState, stepCharged, stepTokens } from './reply.ts';
import { telemetryFor } from './telemetry.ts';
import { thinkingOptions } from './thinking.ts';

/** The Provider call of one reply: how it is ended, where its frames go, what to let go of when it ends. */
export interface ProviderCall {
  signal: AbortSignal;
  /** Why our side ended the call, if it did (asked when the stream aborts or ends). */
  halt: () => Halt | undefined;
  onFrame: (frame: Frame) => void;
  closeTools: () => Promise<void>;
  releaseAttachments: () => void;
}

/** The options of one reply's Provider call: its Model, context, tools, limits and when it stops. */
export function callOptions(
  deps: TurnDeps,
  plan: TurnPlan,
  context: { system: { head: string; tail: string }; messages: ModelMessage[] },
  /** None at all when the NPC has none: an empty set still costs the SDK a transform on every chunk. */
  tools: ToolSet | undefined,
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
    // A hand-over ends the reply: the named NPC answers next. One that failed (no such NPC) does not: the Model
    // reads why in the next step and may hand over again or answer itself. Before each further step the one just
    // ended is charged and the budgets asked; spent, the reply ends there (all conditions are evaluated each time).
    stopWhen: [
      isStepCount(r.state.maxSteps),
      ({ steps }) => steps.at(-1)?.toolResults.some((t) => t.toolName === MESSAGE_NPC) ?? false,
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
    // Without tools, the quiet time between chunks is the reply's bounds' (ReplyBounds.watchQuiet: a timestamp
    // per chunk, not a timer); the SDK times each step's first chunk, from the Provider's answer on.
    timeout: { chunkMs: tools ? deps.chunkTimeoutMs : undefined, firstChunkMs: deps.chunkTimeoutMs },
    telemetry: telemetryFor(deps.telemetry, 'agentsville.turn'),
    // Errors arrive as stream parts and are reduced; the SDK's default would log them again.
    onError: () => {},
  };
}
