import type { ModelMessage, SystemModelMessage } from 'ai';
import { expandMacros } from '../macros/index.ts';

export interface Identity {
  name: string;
  jobTitle: string;
  description: string;
}

export interface RosterEntry extends Identity {}

/** What a character card adds to an identity (empty for an NPC made by hand). */
export interface Character {
  personality: string;
  scenario: string;
  exampleMessages: string;
  postHistoryInstructions: string;
}

/** A triggered lorebook entry (src/cards' `Triggered`): in the system prompt, or at a depth in the history. */
export type Lore =
  | { content: string; position: 'before_char' | 'after_char' }
  | { content: string; position: 'at_depth'; depth: number; role: 'system' | 'user' | 'assistant' };

export interface PromptInput {
  identity: Identity & Partial<Character>;
  /** The NPC's prompt: a card's system prompt. */
  playerPrompt: string;
  /** Who `{{user}}` is: the Player's display name or handle. */
  user?: string;
  /** Lorebook entries this turn triggered, in the order they go in. */
  lore?: readonly Lore[];
  skills: { name: string; description: string }[];
  unreachableServers: string[];
  memories: string[];
  roster: RosterEntry[];
  summary: string;
}

/** Roster descriptions are paid for on every turn: one sentence, at most 160 characters (seed 003). */
export function rosterLine(description: string, max = 160): string {
  const flat = description.replace(/\s+/g, ' ').trim();
  const sentence = /^.*?[.!?](?=\s|$)/.exec(flat)?.[0] ?? flat;
  return sentence.length <= max ? sentence : `${sentence.slice(0, max - 1).trimEnd()}…`;
}

/**
 * The system prompt, in the seed's order: identity first (unconditional, so the Player's instructions
 * elaborate an established identity and a Provider trimming the prompt drops it last), then the Player's
 * prompt, the Skill index, unreachable Tool servers, recalled Memory, the Party roster, and the rolling
 * summary last. Empty slots are left out. Pure.
 */
export function assembleSystemPrompt(p: PromptInput): string {
  const { head, tail } = systemPromptParts(p);
  return tail ? `${head}\n\n${tail}` : head;
}

/**
 * The system prompt in two: the head that stays the same turn after turn (identity, the Player's prompt, the
 * Skill index) and the tail that moves (unreachable servers, Memory, the roster, the summary). A Provider that
 * caches prompts is told to cache the head. Pure.
 */
export function systemPromptParts(p: PromptInput): { head: string; tail: string } {
  const { name, jobTitle } = p.identity;
  // SillyTavern's macros, expanded here; `{{original}}` (allowed in the system prompt and post-history
  // instructions) stands for the Village's own instructions there, of which there are none beyond the identity.
  const x = (t: string, original?: string) =>
    expandMacros(t, { char: name, user: p.user ?? 'the Player', original }).text.trim();
  const description = x(p.identity.description);
  const sections: string[] = [];
  const who = [`You are ${name}${jobTitle ? `, ${jobTitle}` : ''}.`];
  if (description) who.push(description);
  const personality = x(p.identity.personality ?? '');
  if (personality) who.push(`${name}'s personality: ${personality}`);
  const scenario = x(p.identity.scenario ?? '');
  if (scenario) who.push(`Scenario: ${scenario}`);
  sections.push(`# Who you are\n${who.join('\n')}`);
  const prompt = x(p.playerPrompt, '');
  if (prompt) sections.push(prompt);
  // SillyTavern's example dialogue: each <START> begins another example chat.
  const examples = x((p.identity.exampleMessages ?? '').replace(/<START>/gi, '[Example chat]'));
  if (examples) sections.push(`# How ${name} speaks (examples, not part of this conversation)\n${examples}`);
  if (p.skills.length) {
    const lines = p.skills.map((s) => `- ${s.name}: ${s.description}`);
    sections.push(
      `# Skills\nLoad a Skill's instructions with the load_skill tool when it applies.\n${lines.join('\n')}`,
    );
  }
  const head = sections.splice(0).join('\n\n');
  if (p.unreachableServers.length) {
    sections.push(
      `# Tools unavailable this turn\nThese Tool servers could not be reached, so their tools are missing: ${p.unreachableServers.join(', ')}. Say so if they would have helped.`,
    );
  }
  const lore = (p.lore ?? [])
    .filter((l) => l.position !== 'at_depth')
    .map((l) => x(l.content))
    .filter(Boolean);
  if (lore.length) sections.push(`# What you know of this world\n${lore.join('\n\n')}`);
  if (p.memories.length) sections.push(`# What you remember\n${p.memories.map((m) => `- ${m}`).join('\n')}`);
  if (p.roster.length) {
    const lines = p.roster.map((r) => {
      const line = rosterLine(r.description);
      return `- ${r.name}${r.jobTitle ? ` (${r.jobTitle})` : ''}${line ? `: ${line}` : ''}`;
    });
    sections.push(`# Others in this conversation\n${lines.join('\n')}`);
  }
  if (p.summary.trim()) sections.push(`# Earlier in this conversation\n${p.summary.trim()}`);
  return { head, tail: sections.join('\n\n') };
}

/**
 * A card's post-history instructions, macros expanded, to go after the history (where its author put them);
 * empty when it has none. Pure.
 */
export function postHistoryText(p: Pick<PromptInput, 'identity' | 'user'>): string {
  return expandMacros(p.identity.postHistoryInstructions ?? '', {
    char: p.identity.name,
    user: p.user ?? 'the Player',
    original: '',
  }).text.trim();
}

/**
 * Post-history instructions as a message a Provider kind accepts after the history: a system message where
 * the API takes one there (OpenAI's and compatible ones), else a user message saying what it is (Gemini refuses a
 * system message past the first; Anthropic folds them back into the top). Pure.
 */
export function postHistoryMessage(kind: string | undefined, text: string): ModelMessage {
  if (kind === 'openai' || kind === 'compatible') return { role: 'system', content: text };
  return { role: 'user', content: `[Instructions for your next reply]\n${text}` };
}

/**
 * The history with a turn's @depth lore put in, as SillyTavern injects World Info "at depth": an entry of depth d
 * goes before the newest d messages (0: after the newest), entries of one depth and role joined into one message
 * (newline between, in the order given), deeper ones first, at one depth system then user then assistant. A depth
 * past the history's length puts it first. A system entry is a system message where the Provider kind takes one
 * mid-history, else a user message saying what it is (as `postHistoryMessage`). Macros are expanded as in the
 * system prompt. Pure.
 */
export function withLoreAtDepth(
  messages: readonly ModelMessage[],
  p: Pick<PromptInput, 'identity' | 'user' | 'lore'>,
  kind: string | undefined,
): ModelMessage[] {
  const roles = ['system', 'user', 'assistant'] as const;
  const groups = new Map<string, { depth: number; role: (typeof roles)[number]; texts: string[] }>();
  for (const l of p.lore ?? []) {
    if (l.position !== 'at_depth') continue;
    const text = expandMacros(l.content, { char: p.identity.name, user: p.user ?? 'the Player' }).text.trim();
    if (!text) continue;
    const key = `${l.depth}:${l.role}`;
    const g = groups.get(key) ?? { depth: l.depth, role: l.role, texts: [] };
    g.texts.push(text);
    groups.set(key, g);
  }
  if (groups.size === 0) return [...messages];
  const before = new Map<number, ModelMessage[]>();
  const sorted = [...groups.values()].sort(
    (a, b) => b.depth - a.depth || roles.indexOf(a.role) - roles.indexOf(b.role),
  );
  for (const g of sorted) {
    const at = Math.max(0, messages.length - g.depth);
    const text = g.texts.join('\n');
    const m: ModelMessage =
      g.role === 'assistant'
        ? { role: 'assistant', content: text }
        : g.role === 'user'
          ? { role: 'user', content: text }
          : kind === 'openai' || kind === 'compatible'
            ? { role: 'system', content: text }
            : { role: 'user', content: `[What you know of this world]\n${text}` };
    before.set(at, [...(before.get(at) ?? []), m]);
  }
  return [...messages, null].flatMap((m, i) => [...(before.get(i) ?? []), ...(m ? [m] : [])]);
}

/**
 * The system prompt as a Provider kind takes it. Anthropic caches a prompt prefix only where it is told to: the
 * head is marked (`cache_control`), so from the second turn it is read from the cache at a tenth of the price
 * (when it is long enough for Anthropic to cache at all, about 1,024 tokens). The others get one string; OpenAI
 * and Gemini cache long prefixes on their own. The text is the same either way. Pure.
 */
export function instructionsFor(
  kind: string | undefined,
  parts: { head: string; tail: string },
): string | SystemModelMessage[] {
  if (kind !== 'anthropic') return parts.tail ? `${parts.head}\n\n${parts.tail}` : parts.head;
  const cached: SystemModelMessage = {
    role: 'system',
    content: parts.head,
    providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } },
  };
  return parts.tail ? [cached, { role: 'system', content: parts.tail }] : [cached];
}
