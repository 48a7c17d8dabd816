import type { SystemModelMessage } from 'ai';

export interface Identity {
  name: string;
  jobTitle: string;
  description: string;
}

export interface RosterEntry extends Identity {}

export interface PromptInput {
  identity: Identity;
  playerPrompt: string;
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
  const { name, jobTitle, description } = p.identity;
  const sections: string[] = [];
  const who = [`You are ${name}${jobTitle ? `, ${jobTitle}` : ''}.`];
  if (description.trim()) who.push(description.trim());
  sections.push(`# Who you are\n${who.join('\n')}`);
  if (p.playerPrompt.trim()) sections.push(p.playerPrompt.trim());
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
