/** The names under which the server's own Tools reach a model (and so appear in tool-call Parts). */
export const TOOL_NAMES = {
  bash: 'bash',
  readFile: 'readFile',
  writeFile: 'writeFile',
  remember: 'remember',
  loadSkill: 'load_skill',
  messageNpc: 'message_npc',
  shareFile: 'share_file',
} as const;

/** An MCP Server's tools are named `<server>__<tool>`, so two servers cannot collide. */
export const MCP_SEPARATOR = '__';

/** Longest MCP tool description kept on a tool-call Part (the published step summary made from it is clipped shorter, after covering). */
export const DESCRIPTION_CHARS = 1000;
