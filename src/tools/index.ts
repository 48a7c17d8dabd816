// tools/: what NPCs can do, as grants. Grants -> the AI SDK Tool set of a turn (sandbox, MCP, memory, skills,
// message_npc), under time and output limits; the routes the Player manages them with.
export { MESSAGE_NPC } from './handoff.ts';
export { DEFAULT_LIMITS, type ToolLimits } from './limits.ts';
export { addMemories, MAX_MEMORIES } from './memory.ts';
export { DESCRIPTION_CHARS, MCP_SEPARATOR, TOOL_NAMES } from './names.ts';
export { toolRoutes } from './routes.ts';
export { removeSandbox, SANDBOX_HOME, sandboxFolder, stopSandboxes } from './sandbox/host.ts';
export {
  type ConversationExistsSql,
  sandboxBlobsSql,
  sandboxFileRefersTo,
  sweepSandboxCopies,
} from './sandbox/store.ts';
export { sharedFile } from './share.ts';
export { grantTargets, skillNames } from './store.ts';
export { buildTurnTools, type ToolContext, type TurnTools } from './toolset.ts';
