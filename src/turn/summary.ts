import { generateText, type LanguageModel } from 'ai';
import { attachmentLine, type HistoryTurn, turnTokens } from './history.ts';
import { telemetryFor } from './telemetry.ts';
import { windowHistory } from './window.ts';

const INSTRUCTIONS = `You keep the rolling summary of a conversation between a Player and one or more NPCs.
You are given the summary so far and the turns that have just left the visible history.
Return the updated summary: decisions, facts, names, promises and open questions that later turns may refer back to.
Write plain prose, at most about 300 words. Return only the summary.`;

/**
 * Folds turns that fell off the window into the rolling summary, through the same Provider machinery as the
 * reply. Incremental: only the dropped turns are sent, with the summary so far, never turns already
 * summarised. Large backlogs go in budget-sized chunks so no call exceeds the history budget.
 */
export async function foldIntoSummary<T extends HistoryTurn>(args: {
  model: LanguageModel;
  summary: string;
  dropped: readonly T[];
  party: boolean;
  budget: number;
  signal?: AbortSignal;
  /** Most calls in one turn: a long backlog (an imported Conversation) is folded over the turns that follow. */
  maxChunks?: number;
  /**
   * After each call: the summary so far, the last turn it covers, and the tokens the call took (the Provider's
   * count, else an estimate at four characters a token). Saved and charged as it goes, so a Stop loses none.
   */
  onChunk?: (summary: string, through: T, tokens: number) => Promise<void>;
  /** Asked before each call: false (the day's budget is spent) stops folding, with what was folded so far. */
  mayCall?: () => Promise<boolean>;
  /** The AI SDK's OpenTelemetry spans (telemetry.ts). */
  telemetry?: boolean;
}): Promise<string> {
  let summary = args.summary;
  let rest = args.dropped.slice();
  for (let calls = 0; rest.length && calls < (args.maxChunks ?? Number.POSITIVE_INFINITY); calls++) {
    // Take the longest prefix of `rest` that fits the budget (windowing the reversed list gives the head).
    const { kept } = windowHistory(rest.slice().reverse(), args.budget, (t) => turnTokens(t, args.party));
    const chunk = kept.reverse();
    rest = rest.slice(chunk.length);
    const transcript = chunk
      .filter((t) => t.text || t.attachments?.length)
      .map(
        (t) =>
          `${t.role === 'player' ? 'Player' : (t.npcName ?? 'NPC')}: ${[t.text, attachmentLine(t)].filter(Boolean).join(' ')}`,
      )
      .join('\n\n');
    if (args.mayCall && !(await args.mayCall())) break;
    const prompt = `Summary so far:\n${summary || '(none yet)'}\n\nTurns to fold in:\n${transcript}`;
    const { text, usage } = await generateText({
      model: args.model,
      instructions: INSTRUCTIONS,
      prompt,
      abortSignal: args.signal,
      maxRetries: 1,
      telemetry: telemetryFor(args.telemetry, 'agentsville.summary'),
    });
    summary = text.trim();
    const reported = (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0);
    const tokens = reported || Math.ceil((INSTRUCTIONS.length + prompt.length + text.length) / 4);
    await args.onChunk?.(summary, chunk.at(-1)!, tokens);
  }
  return summary;
}
