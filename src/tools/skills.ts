import { tool } from 'ai';
import { z } from 'zod';

export interface Skill {
  id: string;
  name: string;
  description: string;
  instructions: string;
}

export const SkillInput = z
  .object({
    name: z
      .string()
      .trim()
      .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'a skill name is lowercase letters, digits and dashes'),
    description: z.string().trim().min(1).max(300),
    instructions: z.string().min(1).max(20_000),
  })
  .strict();

/** `load_skill`: the system prompt carries only the index; instructions are loaded on demand. */
export function loadSkillTool(skills: Skill[]) {
  const byName = new Map(skills.map((s) => [s.name, s]));
  return tool({
    description:
      'Load the full instructions of one of your Skills (listed in the system prompt) before using it.',
    inputSchema: z.object({ name: z.string().describe('The Skill name, as listed.') }),
    execute: async ({ name }) => {
      const skill = byName.get(name);
      if (!skill)
        throw new Error(`There is no Skill named "${name}". Known: ${[...byName.keys()].join(', ')}.`);
      return { name, instructions: skill.instructions };
    },
  });
}
