import { createMCPClient, type MCPClient } from '@ai-sdk/mcp';
import { FetchRequestError } from '@atproto-labs/fetch';
import type { ToolSet } from 'ai';
import { SlotWaitError } from '../db/index.ts';
import { checkJsonLimits, type JsonLimits } from '../json/index.ts';
import { type Outbound, RefusedAddressError } from '../outbound/index.ts';
import { LeashEndedError, leashed } from './mcpLeash.ts';
import { DESCRIPTION_CHARS, MCP_SEPARATOR } from './names.ts';

export interface McpServer {
  id: string;
  name: string;
  url: string;
  headers: Record<string, string>;
}

/**
 * Connects to an MCP Server for one turn, through the outbound policy, and returns its tools, named
 * `<server>__<tool>` so two servers cannot collide. A server that cannot be reached in time is reported by a
 * short reason of ours, and the turn goes on without it: nothing a failing server sent enters a prompt.
 */
export async function mcpTools(
  server: McpServer,
  o: {
    outbound: Outbound;
    timeoutMs: number;
    callTimeoutMs: number;
    /** The prefix of its tools' names, when not the name's own (see mcpPrefixes). */
    prefix?: string;
  },
): Promise<
  | { tools: ToolSet; descriptions: Record<string, string>; close: () => Promise<void> }
  | { unreachable: string }
> {
  // Each exchange is bounded: a tool call's own limit, plus the time to connect. And the client's requests
  // together: a server can ask it for replies (each request it sends is answered by a POST of the client's own).
  const exchangeMs = o.callTimeoutMs + o.timeoutMs;
  const leash = leashed(o.outbound.fetch({ timeoutMs: exchangeMs, maxBytes: 8 * 1024 * 1024 }), exchangeMs);
  try {
    const client = await withTimeout(
      createMCPClient({
        transport: { type: 'http', url: server.url, headers: server.headers, fetch: leash.fetch },
      }),
      o.timeoutMs,
      (late) => late.close(),
    ).catch((e: unknown) => {
      // A client not made in time is never closed by anyone who could wait for it: nothing of it may go on.
      leash.end();
      throw e;
    });
    // Its close (a DELETE of the session) is bounded as connecting is; then nothing of the client goes on.
    const close = () =>
      withTimeout(client.close(), o.timeoutMs)
        .catch(() => {})
        .finally(leash.end);
    try {
      const chosen = chooseTools(
        await withTimeout(listTools(client), o.timeoutMs),
        o.prefix ?? wordPrefix(server.name),
      );
      // Made into tools only once chosen: a page of 160,000 definitions made 267 MB of them.
      const tools = client.toolsFromDefinitions({ tools: [...chosen.values()] }) as ToolSet;
      const named: ToolSet = {};
      const descriptions: Record<string, string> = {};
      for (const [full, definition] of chosen) {
        const t = tools[definition.name];
        if (!t) continue;
        named[full] = withShortErrors(t, server.name);
        // Kept on the call's Part: it is the published step's default summary (never the arguments).
        if (typeof t.description === 'string' && t.description.trim()) {
          descriptions[full] = t.description.replace(/\s+/g, ' ').trim().slice(0, DESCRIPTION_CHARS);
        }
      }
      return { tools: named, descriptions, close };
    } catch (e) {
      await close();
      throw e;
    }
  } catch (e) {
    return { unreachable: `${server.name} (${reasonFor(e)})` };
  }
}

/**
 * What of a server's tools a turn takes: every tool goes to the Provider with each step, so their number and their
 * schemas' size are bounded (a page of 1 MB listed 20,000 tools), and a schema nested past what can be sent
 * (JSON.stringify gives up near 4,000 levels) would fail every turn of the NPC, not only the server.
 */
export const MCP_TOOLS = {
  perServer: 64,
  /** Pages of the server's list read at most (each up to the 8 MB an answer may be). */
  pages: 4,
  schema: { nodes: 5_000, depth: 32, items: 500, chars: 10_000 } satisfies JsonLimits,
};

type Definition = Awaited<ReturnType<MCPClient['listTools']>>['tools'][number];

/** The server's tool definitions, page after page, until MCP_TOOLS.perServer or MCP_TOOLS.pages. */
async function listTools(client: MCPClient): Promise<Definition[]> {
  const all: Definition[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MCP_TOOLS.pages && all.length < MCP_TOOLS.perServer; page++) {
    const listed = await client.listTools(cursor ? { params: { cursor } } : undefined);
    // Only what could be chosen is kept (spread whole, a page of 130,000 threw).
    all.push(...listed.tools.slice(0, 4 * MCP_TOOLS.perServer));
    cursor = listed.nextCursor;
    if (!cursor) break;
  }
  return all;
}

/**
 * The definitions a turn takes, by the name the Provider sees: made of what Providers take (letters, digits, _ and
 * -), the first of two that end up the same kept, each schema within MCP_TOOLS.schema, MCP_TOOLS.perServer at most.
 */
function chooseTools(definitions: Definition[], prefix: string): Map<string, Definition> {
  const chosen = new Map<string, Definition>();
  for (const d of definitions) {
    if (chosen.size >= MCP_TOOLS.perServer) break;
    const full = `${prefix}${MCP_SEPARATOR}${String(d.name).replace(/[^a-zA-Z0-9_-]/g, '_')}`.slice(0, 64);
    if (!chosen.has(full) && fitSchema(d.inputSchema)) chosen.set(full, d);
  }
  return chosen;
}

function fitSchema(schema: unknown): boolean {
  try {
    checkJsonLimits(schema ?? {}, MCP_TOOLS.schema, 'A tool');
    return true;
  } catch {
    return false;
  }
}

/** Why a server failed, in our words: never the text it answered with, which could be anything. */
function reasonFor(e: unknown): string {
  if (e instanceof TimeoutError) return 'did not answer in time';
  for (let c: unknown = e; c; c = (c as { cause?: unknown }).cause) {
    if (c instanceof LeashEndedError) return 'was cut off (too many requests, or the turn moved on)';
    if (c instanceof SlotWaitError) return 'was asked too many things at once';
    // Refused by the outbound policy, before or at connect: first, since these carry a status of their own.
    if (c instanceof RefusedAddressError || c instanceof FetchRequestError)
      return 'is not at an address this server may reach';
    const err = c as { statusCode?: unknown; code?: unknown; name?: unknown };
    if (typeof err.statusCode === 'number') return `answered HTTP ${err.statusCode}`;
    if (typeof err.code === 'string' && UNREACHABLE.test(err.code)) return 'could not be reached';
    if (err.name === 'AbortError' || err.name === 'TimeoutError') return 'did not answer in time';
  }
  return 'is not an MCP server';
}
const UNREACHABLE = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT/;

/** A tool whose transport failures reach the model as our short reason, not as what the server sent. */
function withShortErrors(t: ToolSet[string], serverName: string): ToolSet[string] {
  const execute = t.execute;
  if (!execute) return t;
  return {
    ...t,
    execute: async (input: unknown, options: Parameters<NonNullable<typeof execute>>[1]) => {
      try {
        return await execute(input as never, options);
      } catch (e) {
        throw new Error(`The MCP Server ${serverName} ${reasonFor(e)}.`);
      }
    },
  } as ToolSet[string];
}

class TimeoutError extends Error {}

/** `p`, or a TimeoutError after `ms`; what `p` brings after that is handed to `late` (e.g. to close it). */
function withTimeout<T>(p: Promise<T>, ms: number, late?: (value: T) => unknown): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  p.then(
    (value) => {
      if (timedOut) void Promise.resolve(late?.(value)).catch(() => {});
    },
    () => {},
  );
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        reject(new TimeoutError(`no answer in ${ms} ms`));
      }, ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Each server's tool-name prefix, in the order granted: two servers whose names make the same one ("Search" and
 * "search!") would give the Provider the same tool names, and the later's tools would replace the earlier's. The
 * first keeps it; each later one takes the first free `_2`, `_3`… after it. Stable while the grants are.
 */
export function mcpPrefixes(names: readonly string[]): string[] {
  const taken = new Set(names.map(wordPrefix));
  const given = new Set<string>();
  return names.map((name) => {
    const own = wordPrefix(name);
    let prefix = own;
    for (let n = 2; given.has(prefix) || (prefix !== own && taken.has(prefix)); n++) prefix = `${own}_${n}`;
    given.add(prefix);
    return prefix;
  });
}

/**
 * The server's name as a tool-name prefix: lower-case words joined by `_`, at most 32 characters, cut between
 * words where it can be (a published step's name carries it: a word cut short would escape the covering pass).
 */
function wordPrefix(name: string): string {
  // Never `_` at either end: a prefix then holds no `__`, so where it ends in a tool's name is never in doubt, and
  // two servers' tools can share a name only when their prefixes are the same (which mcpPrefixes prevents).
  const full =
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '') || 'mcp';
  if (full.length <= 32) return full;
  const cut = full.slice(0, 33);
  const at = cut.lastIndexOf('_');
  return at > 0 ? cut.slice(0, at) : full.slice(0, 32);
}
