import { createMCPClient } from '@ai-sdk/mcp';
import { FetchRequestError } from '@atproto-labs/fetch';
import type { ToolSet } from 'ai';
import { checkJsonLimits, type JsonLimits } from '../json/index.ts';
import { type Outbound, RefusedAddressError } from '../outbound/index.ts';
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
  o: { outbound: Outbound; timeoutMs: number; callTimeoutMs: number },
): Promise<
  | { tools: ToolSet; descriptions: Record<string, string>; close: () => Promise<void> }
  | { unreachable: string }
> {
  // Each exchange is bounded: a tool call's own limit, plus the time to connect. And the client's requests
  // together: a server can ask it for replies (each request it sends is answered by a POST of the client's own).
  const leash = leashed(
    o.outbound.fetch({ timeoutMs: o.callTimeoutMs + o.timeoutMs, maxBytes: 8 * 1024 * 1024 }),
  );
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
      const tools = (await withTimeout(client.tools(), o.timeoutMs)) as ToolSet;
      const prefix = wordPrefix(server.name);
      const named: ToolSet = {};
      const descriptions: Record<string, string> = {};
      for (const [name, t] of Object.entries(tools)) {
        // Each name as Providers take them (letters, digits, _ and -), the first of two that end up the same kept.
        const full = `${prefix}${MCP_SEPARATOR}${name.replace(/[^a-zA-Z0-9_-]/g, '_')}`.slice(0, 64);
        if (full in named || !fitTool(t)) continue;
        if (Object.keys(named).length >= MCP_TOOLS.perServer) break;
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
 * What one client may send in a turn: requests at once, and in all. A server's own requests (a batch of pings in
 * answer to anything) are each answered by a POST of the client's, whose answer can hold more: unbounded, one
 * batch opened a socket per ping, thousands at once, and went on after the turn had given up on the server.
 */
export const MCP_REQUESTS = { atOnce: 8, total: 500, lifetimeMs: 30 * 60_000 };

/**
 * `fetch` on a leash: at most MCP_REQUESTS at once and in all, every request cut off once `end` is called (or the
 * total is passed, or the lifetime: a client a failure left unclosed ends too).
 */
function leashed(fetch: typeof globalThis.fetch) {
  const ended = new AbortController();
  const end = () => ended.abort(new Error('the MCP client was closed'));
  const lifetime = setTimeout(end, MCP_REQUESTS.lifetimeMs);
  lifetime.unref();
  ended.signal.addEventListener('abort', () => clearTimeout(lifetime), { once: true });
  let sent = 0;
  let open = 0;
  const leashedFetch: typeof globalThis.fetch = async (input, init) => {
    ended.signal.throwIfAborted();
    if (++sent > MCP_REQUESTS.total) {
      end();
      ended.signal.throwIfAborted();
    }
    if (open >= MCP_REQUESTS.atOnce) throw new Error('too many requests at once to one MCP Server');
    open++;
    try {
      const signal = init?.signal ? AbortSignal.any([init.signal, ended.signal]) : ended.signal;
      return await fetch(input, { ...init, signal });
    } finally {
      open--;
    }
  };
  return { fetch: leashedFetch, end };
}

/**
 * What of a server's tools a turn takes: every tool goes to the Provider with each step, so their number and their
 * schemas' size are bounded (a page of 1 MB listed 20,000 tools), and a schema nested past what can be sent
 * (JSON.stringify gives up near 4,000 levels) would fail every turn of the NPC, not only the server.
 */
export const MCP_TOOLS = {
  perServer: 64,
  schema: { nodes: 5_000, depth: 32, items: 500, chars: 10_000 } satisfies JsonLimits,
};

/** Whether a tool's input schema is within MCP_TOOLS.schema (one that is not is left out). */
function fitTool(t: ToolSet[string]): boolean {
  const schema = (t.inputSchema as { jsonSchema?: unknown } | undefined)?.jsonSchema;
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
 * The server's name as a tool-name prefix: lower-case words joined by `_`, at most 32 characters, cut between
 * words where it can be (a published step's name carries it: a word cut short would escape the covering pass).
 */
function wordPrefix(name: string): string {
  const full = name.toLowerCase().replace(/[^a-z0-9]+/g, '_');
  if (full.length <= 32) return full;
  const cut = full.slice(0, 33);
  const at = cut.lastIndexOf('_');
  return at > 0 ? cut.slice(0, at) : full.slice(0, 32);
}
