import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/**
 * A real MCP server (the official SDK, Streamable HTTP, stateless) with an `add` tool, a `slow` one that
 * never answers in time, and a `boom` one that fails. Records the headers it was called with.
 */
export async function startMcpServer(): Promise<{
  url: string;
  headers: http.IncomingHttpHeaders[];
  close(): Promise<void>;
}> {
  const seen: http.IncomingHttpHeaders[] = [];
  const build = () => {
    const server = new McpServer({ name: 'calc', version: '1.0.0' });
    server.registerTool(
      'add',
      { description: 'Add two numbers', inputSchema: { a: z.number(), b: z.number() } },
      async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
    );
    server.registerTool('slow', { description: 'Takes a minute' }, async () => {
      await new Promise((r) => setTimeout(r, 60_000));
      return { content: [{ type: 'text', text: 'late' }] };
    });
    server.registerTool('boom', { description: 'Always fails' }, async () => {
      throw new Error('the calculator exploded');
    });
    return server;
  };
  const httpServer = http.createServer(async (req, res) => {
    seen.push(req.headers);
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, raw ? JSON.parse(raw) : undefined);
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    headers: seen,
    close: async () => {
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
