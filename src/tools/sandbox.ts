import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ToolSet } from 'ai';
import { createBashTool } from 'bash-tool';
import { Bash, InMemoryFs, MountableFs, ReadWriteFs } from 'just-bash';

export const SANDBOX_HOME = '/home/npc';

/**
 * An isolated shell per Conversation: just-bash, a simulated bash over a virtual filesystem, never the host's
 * shell. Only the Conversation's own folder (DATA_DIR/sandboxes/<id>) is mounted, at /home/npc, so files the
 * NPC writes persist across turns and restarts; everything else is an empty in-memory tree. No network.
 */
export async function sandboxTools(
  dataDir: string,
  conversationId: string,
  maxOutputLength: number,
): Promise<ToolSet> {
  const root = path.resolve(dataDir, 'sandboxes', conversationId);
  await mkdir(root, { recursive: true });
  const fs = new MountableFs({ base: new InMemoryFs() });
  fs.mount(SANDBOX_HOME, new ReadWriteFs({ root }));
  const sandbox = new Bash({ fs, cwd: SANDBOX_HOME, executionLimits: { maxCallDepth: 50 } });
  const { tools } = await createBashTool({ sandbox, destination: SANDBOX_HOME, maxOutputLength });
  return tools as ToolSet;
}
