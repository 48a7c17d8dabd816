import type { ModelMessage } from 'ai';
import { type Lorebook, triggerEntries } from '../cards/index.ts';
import { type Conversation, chargeTokens, type HistoryRow, saveSummary } from '../conversations/index.ts';
import type { TurnTools } from '../tools/index.ts';
import { inputSupport, type Npc, type VillageSettings } from '../village/index.ts';
import { loadAttachments } from './attachments.ts';
import type { TurnBudget } from './budget.ts';
import type { Speaker, TurnDeps } from './deps.ts';
import { toModelMessages, turnTokens } from './history.ts';
import { postHistoryMessage, postHistoryText, systemPromptParts, withLoreAtDepth } from './prompt.ts';
import { foldIntoSummary } from './summary.ts';
import { REFILL_SHARE, windowHistory } from './window.ts';

/** Summary calls one turn may make: a backlog past that (an imported Conversation) is folded over later turns. */
const SUMMARY_CALLS_PER_TURN = 4;
/** Lorebook entries may take at most this share of the History budget. */
const LORE_SHARE = 0.25;

export interface Handoff {
  from: string;
  message: string;
}

/** What the context is assembled from. */
export interface ContextArgs {
  conversation: Conversation;
  /** Whose turn it is: the summary calls are charged to them. */
  playerId: string;
  participants: Npc[];
  speaker: Speaker;
  settings: VillageSettings;
  tail: HistoryRow[];
  /** The speaker's lorebooks (read with the history: see replyIO.ts's prepare). */
  books: Lorebook[];
  tools: TurnTools;
  handoff?: Handoff;
  signal: AbortSignal;
  /** Asked before each summary call. */
  budget: TurnBudget;
  /** Who `{{user}}` is in the NPC's text: the Player's handle. */
  user?: string;
}

export interface Context {
  system: { head: string; tail: string };
  messages: ModelMessage[];
  /** Lets go of the attachment bytes the messages hold (when the reply ends). */
  release: () => void;
  /** Summary calls were made (and charged): the budgets must be asked again after them. */
  summarised: boolean;
}

/**
 * History windowed to the Village budget, what falls off folded into the rolling summary first; the system
 * prompt in the seed's order; and, after a handoff, the message handed over as the newest turn.
 */
export async function assembleContext(deps: TurnDeps, args: ContextArgs): Promise<Context> {
  const { conversation, participants, speaker, settings, tail, tools } = args;
  const party = participants.length > 1;
  const { kept, dropped } = windowHistory(
    tail,
    settings.historyBudget,
    (t) => turnTokens(t, party),
    Math.floor(settings.historyBudget * REFILL_SHARE),
  );
  const summary = dropped.length ? await summarise(deps, args, dropped, party) : conversation.summary;
  // The NPC's lorebooks, scanned over the turns it is shown (the newest last, the hand-over's message with them).
  const recent = kept.map((t) => t.text);
  if (args.handoff) recent.push(args.handoff.message);
  const lore = triggerEntries(args.books, recent, Math.floor(settings.historyBudget * LORE_SHARE));
  const system = systemPromptParts({
    identity: speaker.npc,
    user: args.user,
    lore,
    playerPrompt: speaker.npc.prompt,
    skills: tools.skills,
    unreachableServers: tools.unreachable,
    memories: tools.memories,
    roster: participants.filter((p) => p.id !== speaker.npc.id),
    summary,
  });
  const { contents, release } = await loadAttachments(
    deps.sql,
    conversation.id,
    kept,
    inputSupport(speaker.kind, speaker.resolved.provider, speaker.resolved.model),
  );
  const history = toModelMessages(kept, party, contents);
  if (args.handoff)
    history.push({ role: 'user', content: `[${args.handoff.from}, to you]: ${args.handoff.message}` });
  // @depth lore goes into the history (SillyTavern's "at depth"), counted back from the newest message.
  const messages = withLoreAtDepth(history, { identity: speaker.npc, user: args.user, lore }, speaker.kind);
  // A card's post-history instructions come after the history, as its author meant (SillyTavern's order).
  const after = postHistoryText({ identity: speaker.npc, user: args.user });
  if (after) messages.push(postHistoryMessage(speaker.kind, after));
  return { system, messages, release, summarised: dropped.length > 0 };
}

/**
 * The turns that fell off the window folded into the rolling summary, each call's summary kept and charged at
 * once. Returns the summary as far as it got.
 */
async function summarise(
  deps: TurnDeps,
  args: ContextArgs,
  dropped: HistoryRow[],
  party: boolean,
): Promise<string> {
  const { conversation, speaker, settings } = args;
  let summary = conversation.summary;
  try {
    summary = await foldIntoSummary({
      model: speaker.model,
      summary,
      dropped,
      party,
      budget: settings.historyBudget,
      signal: args.signal,
      maxChunks: SUMMARY_CALLS_PER_TURN,
      telemetry: deps.telemetry,
      // Each call is the Player's spending like the reply itself, and its summary is kept at once.
      mayCall: async () => (await args.budget.spent()) === undefined,
      onChunk: async (s, through, tokens) => {
        await saveSummary(deps.sql, conversation.id, s, through.seq);
        await chargeTokens(deps.sql, args.playerId, tokens);
        summary = s;
      },
    });
  } catch (e) {
    // The reply goes on with the summary as far as it got; the turns not yet folded in are on the next turn.
    deps.log('rolling summary failed', e);
  }
  // Past SUMMARY_CALLS_PER_TURN (a long imported backlog) the oldest dropped turns are neither in the window
  // nor yet in the summary for this turn: later turns fold them in, four calls at a time.
  return summary;
}
