import type { StepRecord } from '../lexicon/index.ts';
import type { Part, ToolPart } from '../parts/index.ts';
import type { Problem, TurnChoice } from '../redaction/index.ts';
import { MCP_SEPARATOR, TOOL_NAMES } from '../tools/index.ts';

const OWN_TOOLS: ReadonlySet<string> = new Set(Object.values(TOOL_NAMES));

/**
 * A published step's name when the Player writes none: the server's own Tools by their name (the same for every
 * Player); anything else by a generic one — an MCP tool's name starts with the Player's label for the server.
 */
export function defaultStepName(part: ToolPart): string {
  if (part.name && OWN_TOOLS.has(part.name)) return part.name;
  return part.name?.includes(MCP_SEPARATOR) ? 'mcp-tool' : 'tool';
}

/**
 * A published step's summary when the Player writes none: what kind of thing the call did, never its
 * arguments or output (those carry the Player's and the NPC's words). The server's own Tools get a neutral
 * phrase; an MCP tool a generic one — its description comes from the Player's server and would name what the
 * generic step name hides (the editor offers it to publish). Unclipped: the projection clips after covering.
 */
export function defaultStepSummary(
  part: ToolPart,
  known: { agents: readonly string[]; skills: readonly string[] },
): string {
  const input = (part.input && typeof part.input === 'object' ? part.input : {}) as Record<string, unknown>;
  switch (part.name) {
    case TOOL_NAMES.bash:
      return 'ran a command in the sandbox';
    case TOOL_NAMES.readFile:
      return 'read a file in the sandbox';
    case TOOL_NAMES.writeFile:
      return 'wrote a file in the sandbox';
    case TOOL_NAMES.remember:
      return 'saved a memory';
    case TOOL_NAMES.loadSkill:
      // Only the name of one of the Player's Skills, never whatever the model wrote.
      return typeof input.name === 'string' && known.skills.includes(input.name)
        ? `loaded the skill ${input.name}`
        : 'loaded a skill';
    case TOOL_NAMES.messageNpc: {
      // Only a name the session already publishes (an agent of it), never whatever the model wrote.
      const asked = typeof input.npc === 'string' ? input.npc.trim().toLowerCase() : '';
      const who = known.agents.find((a) => a.toLowerCase() === asked);
      return who ? `asked ${who}` : 'asked another NPC';
    }
  }
  if (part.name?.includes(MCP_SEPARATOR)) return 'called a tool of an MCP Server';
  return 'called a tool';
}

/** The turn's tool calls as published steps: the Player's names and summaries, or neutral defaults. */
export function stepsOf(
  parts: readonly Part[],
  index: number,
  choice: TurnChoice,
  known: { agents: readonly string[]; skills: readonly string[] },
  problem: (code: Problem['code'], message: string) => void,
): StepRecord[] {
  const tools = parts.filter((p): p is Extract<Part, { type: 'tool' }> => p.type === 'tool');
  if (tools.length > 100)
    problem(
      'TOO_MANY_STEPS',
      `Turn ${index + 1} made ${tools.length} tool calls; at most 100 can be published.`,
    );
  return tools.slice(0, 100).map((part, i) => {
    const step: StepRecord = {
      name: choice.stepNames?.[i]?.trim() || defaultStepName(part),
      summary: choice.steps?.[i]?.trim() || defaultStepSummary(part, known),
    };
    if (part.state === 'failed') step.failed = true;
    return step;
  });
}
