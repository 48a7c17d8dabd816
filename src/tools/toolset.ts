import type { ToolSet } from 'ai';
import type { Sql } from '../db/index.ts';
import type { Outbound } from '../outbound/index.ts';
import { MESSAGE_NPC, messageNpcTool } from './handoff.ts';
import { DEFAULT_LIMITS, limitTools, type ToolLimits } from './limits.ts';
import { mcpPrefixes, mcpTools } from './mcp.ts';
import { recallMemory, rememberTool } from './memory.ts';
import { TOOL_NAMES } from './names.ts';
import { DEFAULT_SANDBOX_LIMITS, SANDBOX_WAIT_MS, sandboxFolder, sandboxTools } from './sandbox/host.ts';
import { type ConversationExistsSql, SandboxStore } from './sandbox/store.ts';
import { type ShareLimits, shareFileTool } from './share.ts';
import { loadSkillTool } from './skills.ts';
import { grantedTools, NOTHING_GRANTED } from './store.ts';

export interface ToolContext {
  sql: Sql;
  dataDir: string;
  /** How MCP Servers are reached: the outbound policy (public addresses only, unless the instance allows). */
  outbound: Outbound;
  limits?: ToolLimits;
  /** The Village's quota on one sandbox's files. */
  sandboxQuotaMb?: number;
  /** What a file shared with the Player may be (the Village's attachment limits). */
  shareLimits?: ShareLimits;
  playerId: string;
  conversationId: string;
  /** `hasGrants` false (known from the turn's reads): no grants to read. */
  npc: { id: string; name: string; hasGrants?: boolean };
  /** The other NPCs of a Party, by name: they can be handed the Conversation. */
  others: string[];
  /** What the Player asked, for recalling Memory. */
  question: string;
  /** Whether the Conversation still exists, as a condition (conversations' `conversationExistsSql`). */
  conversationExists: ConversationExistsSql;
}

export interface TurnTools {
  tools: ToolSet;
  /** Tool servers that could not be reached this turn, for the system prompt's note. */
  unreachable: string[];
  /** The index of granted Skills: name and description only. */
  skills: { name: string; description: string }[];
  /** Recalled Memory, when the NPC may use Memory. */
  memories: string[];
  /** MCP tools' own descriptions by tool name, kept on their calls' Parts. */
  descriptions: Record<string, string>;
  close(): Promise<void>;
}

/** The Conversation's sandbox files in PostgreSQL, one store per turn's Tool set. */
const stores = new WeakMap<ToolContext, SandboxStore>();
function sandboxStore(ctx: ToolContext): SandboxStore {
  let store = stores.get(ctx);
  if (!store) {
    store = new SandboxStore(
      ctx.sql,
      ctx.conversationId,
      sandboxFolder(ctx.dataDir, ctx.conversationId),
      ctx.conversationExists,
      ctx.playerId,
    );
    stores.set(ctx, store);
  }
  return store;
}

/**
 * The NPC's Tool set for this turn, built from its grants: a Tool nobody granted is one the model cannot see.
 * Every Tool runs under the time and output limits; Stop aborts running ones.
 */
export async function buildTurnTools(ctx: ToolContext): Promise<TurnTools> {
  const granted = ctx.npc.hasGrants === false ? NOTHING_GRANTED : await grantedTools(ctx.sql, ctx.npc.id);
  const limits = ctx.limits ?? DEFAULT_LIMITS;
  const tools: ToolSet = {};
  const closers: (() => Promise<void>)[] = [];
  const unreachable: string[] = [];
  const descriptions: Record<string, string> = {};
  const prefixes = mcpPrefixes(granted.mcpServers.map((s) => s.name));
  const [sandbox, memories, servers] = await Promise.all([
    granted.sandbox
      ? sandboxTools(
          ctx.dataDir,
          ctx.conversationId,
          {
            ...DEFAULT_SANDBOX_LIMITS,
            timeoutMs: limits.timeoutMs,
            maxOutputBytes: limits.maxOutputBytes,
            quotaBytes: (ctx.sandboxQuotaMb ?? 100) * 1024 * 1024,
          },
          sandboxStore(ctx),
          ctx.playerId,
        )
      : undefined,
    granted.memory ? recallMemory(ctx.sql, ctx.playerId, ctx.question) : [],
    Promise.all(
      granted.mcpServers.map((s, i) =>
        mcpTools(s, {
          outbound: ctx.outbound,
          timeoutMs: 5000,
          callTimeoutMs: limits.timeoutMs,
          prefix: prefixes[i],
        }),
      ),
    ),
  ]);
  if (sandbox) {
    Object.assign(tools, sandbox);
    if (ctx.shareLimits)
      tools[TOOL_NAMES.shareFile] = shareFileTool(
        ctx.sql,
        { ...ctx, store: sandboxStore(ctx) },
        ctx.shareLimits,
      );
  }
  if (granted.memory) tools[TOOL_NAMES.remember] = rememberTool(ctx.sql, ctx.playerId, ctx.npc.name);
  if (granted.skills.length) tools[TOOL_NAMES.loadSkill] = loadSkillTool(granted.skills);
  for (const server of servers) {
    if ('unreachable' in server) unreachable.push(server.unreachable);
    else {
      // A name already given is never replaced (mcpPrefixes keeps servers' names apart; this holds whatever).
      for (const [name, tool] of Object.entries(server.tools)) {
        if (name in tools) continue;
        tools[name] = tool;
        const description = server.descriptions[name];
        if (description !== undefined) descriptions[name] = description;
      }
      closers.push(server.close);
    }
  }
  if (ctx.others.length) tools[MESSAGE_NPC] = messageNpcTool(ctx.others);
  return {
    tools: limitTools(
      tools,
      limits,
      Object.fromEntries(Object.keys(sandbox ?? {}).map((name) => [name, SANDBOX_WAIT_MS])),
    ),
    unreachable,
    skills: granted.skills.map((s) => ({ name: s.name, description: s.description })),
    memories,
    descriptions,
    async close() {
      await Promise.all(closers.map((c) => c().catch(() => {})));
    },
  };
}
