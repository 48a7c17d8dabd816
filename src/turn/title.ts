import { generateText, type LanguageModel } from 'ai';
import { messageText, retitle, titleFrom, titleOf } from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import type { TurnBudget } from './budget.ts';
import type { TurnDeps, TurnPlan } from './deps.ts';
import { telemetryFor } from './telemetry.ts';

const INSTRUCTIONS = `You name conversations. Given the first exchange of a conversation, reply with a title for it:
at most six words, in the language the Player wrote in, no quotation marks, no Markdown, no final full stop.
Reply with the title only.`;

/** Characters of each side of the exchange sent: enough to know what it is about, bounded whatever its length. */
const EXCERPT = 1500;
const TITLE_TOKENS = 40;
const TITLE_TIMEOUT_MS = 20_000;

/** The prompt for the title call: the Player's first Message and the reply, each cut to an excerpt. Pure. */
export function titlePrompt(player: string, npcName: string, reply: string): string {
  return `Player: ${player.slice(0, EXCERPT)}\n\n${npcName}: ${reply.slice(0, EXCERPT)}`;
}

/** What the Model answered, made a title (first line, quotes and Markdown marks gone, 80 at most); or none. */
export function cleanTitle(answer: string): string | undefined {
  const line = answer.trim().split('\n')[0] ?? '';
  const title = titleFrom(line.replace(/^(?:title:\s*)/i, '').replace(/^["'“”‘’«»]+|["'“”‘’«».]+$/g, ''));
  return title.length >= 2 ? title : undefined;
}

/**
 * After a Conversation's first exchange: a short title summarised by the Model that answered, in place of the
 * first Message's opening words. A Provider call like any other of the turn: the day's budget is asked first
 * and the call is charged to the Player (ADR 0050). Written only while the title is still the one made from
 * the first Message, so a Player's own title (given at creation, or a rename meanwhile) is never replaced.
 * Bounded: an excerpt of each side, 40 output tokens, 20 s. A failure keeps the first Message's title.
 */
export async function summariseTitle(args: {
  sql: Sql;
  model: LanguageModel;
  budget: TurnBudget;
  conversationId: string;
  playerText: string;
  npcName: string;
  replyText: string;
  signal: AbortSignal;
  telemetry?: boolean;
}): Promise<string | undefined> {
  const fallback = titleFrom(args.playerText);
  if (!fallback || !args.replyText.trim()) return undefined;
  // A title the Player gave (at creation, or renamed since) is not asked about at all.
  if ((await titleOf(args.sql, args.conversationId)) !== fallback || (await args.budget.spent()))
    return undefined;
  const prompt = titlePrompt(args.playerText, args.npcName, args.replyText);
  const { text, usage } = await generateText({
    model: args.model,
    instructions: INSTRUCTIONS,
    prompt,
    maxOutputTokens: TITLE_TOKENS,
    abortSignal: AbortSignal.any([args.signal, AbortSignal.timeout(TITLE_TIMEOUT_MS)]),
    maxRetries: 0,
    telemetry: telemetryFor(args.telemetry, 'agentsville.title'),
  });
  const reported = (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0);
  await args.budget.charge(reported || Math.ceil((INSTRUCTIONS.length + prompt.length + text.length) / 4));
  const title = cleanTitle(text);
  if (!title) return undefined;
  return (await retitle(args.sql, args.conversationId, fallback, title)) ? title : undefined;
}

/** Whether a first exchange that completed is followed by the title call (titleFirstExchange). */
export const titleDue = (deps: TurnDeps, plan: TurnPlan) =>
  deps.summariseTitles === true && plan.speaker.kind !== 'demo' && plan.playerMessage.parentId === null;

/**
 * A Conversation's first exchange gets a title summarised by the Model that answered (not the scripted demo,
 * which has nothing to say about it). It never fails the turn: the first Message's words stay the title.
 */
export async function titleFirstExchange(
  deps: TurnDeps,
  plan: TurnPlan,
  /** The reply that answered it. */
  messageId: string,
  budget: TurnBudget,
  signal: AbortSignal,
): Promise<void> {
  const { speaker, playerMessage } = plan;
  if (!titleDue(deps, plan)) return;
  try {
    const replyText = await messageText(deps.sql, messageId);
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
