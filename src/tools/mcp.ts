import { createMCPClient } from '@ai-sdk/mcp';
import type { ToolSet } from 'ai';
import { DESCRIPTION_CHARS, MCP_SEPARATOR } from './names.ts';
import { assertPublicUrl } from './ssrf.ts';

export interface McpServer {
  id: string;
  name: string;
  url: string;
  headers: Record<string, string>;
}

/**
 * Connects to an MCP Server for one turn and returns its tools, named `<server>__<tool>` so two servers cannot
 * collide. A server that cannot be reached in time is reported, and the turn goes on without it.
 */
export async function mcpTools(
  server: McpServer,
  o: { allowPrivate: boolean; timeoutMs: number },
): Promise<
  | { tools: ToolSet; descriptions: Record<string, string>; close: () => Promise<void> }
  | { unreachable: string }
> {
  try {
    await assertPublicUrl(server.url, o.allowPrivate);
    const client = await withTimeout(
      createMCPClient({ transport: { type: 'http', url: server.url, headers: server.headers } }),
      o.timeoutMs,
    );
    try {
      const tools = (await withTimeout(client.tools(), o.timeoutMs)) as ToolSet;
      const prefix = wordPrefix(server.name);
      const named: ToolSet = {};
      const descriptions: Record<string, string> = {};
      for (const [name, t] of Object.entries(tools)) {
        const full = `${prefix}${MCP_SEPARATOR}${name}`.slice(0, 64);
        named[full] = t;
        // Kept on the call's Part: it is the published step's default summary (never the arguments).
        if (typeof t.description === 'string' && t.description.trim()) {
          descriptions[full] = t.description.replace(/\s+/g, ' ').trim().slice(0, DESCRIPTION_CHARS);
        }
      }
      return { tools: named, descriptions, close: () => client.close() };
    } catch (e) {
      await client.close().catch(() => {});
      throw e;
    }
  } catch (e) {
    return { unreachable: `${server.name} (${(e as Error).message})` };
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    p,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)),
  ]);
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
