import { tool } from 'ai';
import { z } from 'zod';
import { TOOL_NAMES } from './names.ts';

export const MESSAGE_NPC = TOOL_NAMES.messageNpc;

/**
 * `message_npc`: hands the Conversation to another NPC of the Party, who answers in the same stream. The reply
 * ends at a call that succeeds; the turn loop (turn/run.ts) starts the named NPC with the message. One naming
 * no NPC here fails with who is, and the Model takes another step (turn/call.ts).
 */
export function messageNpcTool(others: string[]) {
  return tool({
    description: `Hand the conversation to another NPC here (${others.join(', ')}) with a message; they answer next.`,
    inputSchema: z.object({
      npc: z.string().describe('The name of the NPC to hand over to.'),
      message: z.string().min(1).max(4000).describe('What you ask or tell them.'),
    }),
    execute: async ({ npc }) => {
      const match = others.find((o) => o.toLowerCase() === npc.trim().toLowerCase());
      if (!match)
        throw new Error(`There is no NPC named "${npc}" here. You can hand over to: ${others.join(', ')}.`);
      return { handedTo: match };
    },
  });
}
