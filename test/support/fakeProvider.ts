import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake OpenAI-compatible Provider over real HTTP: `/v1/chat/completions` speaking the real Chat Completions
 * wire format (SSE chunks with `choices[].delta`, `reasoning_content`, `tool_calls`, a final `usage`), so the
 * real `@ai-sdk/openai-compatible` provider talks to it. Tests script each reply; requests are recorded.
 */
export interface RecordedRequest {
  body: ChatRequest;
  headers: http.IncomingHttpHeaders;
}

export interface ChatRequest {
  model: string;
  stream?: boolean;
  messages: { role: string; content: unknown }[];
  tools?: { type: string; function: { name: string } }[];
  [key: string]: unknown;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  completion_tokens_details?: { reasoning_tokens?: number };
  prompt_tokens_details?: { cached_tokens?: number };
}

export class Reply {
  /** Resolves when the client has gone (closed its socket). */
  readonly gone: Promise<void>;
  private goneFlag = false;
  constructor(
    private readonly res: http.ServerResponse,
    readonly request: ChatRequest,
  ) {
    this.gone = new Promise((resolve) =>
      res.on('close', () => {
        this.goneFlag = true;
        resolve();
      }),
    );
  }
  get clientGone(): boolean {
    return this.goneFlag;
  }
  private open(): void {
    if (this.res.headersSent) return;
    this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  }
  chunk(
    delta: Record<string, unknown>,
    finish: string | null = null,
    extra: Record<string, unknown> = {},
  ): void {
    this.open();
    if (this.goneFlag) return;
    const body = {
      id: 'chatcmpl-fake',
      object: 'chat.completion.chunk',
      created: 0,
      model: this.request.model,
    };
    this.res.write(
      `data: ${JSON.stringify({ ...body, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`,
    );
  }
  text(text: string): void {
    this.chunk({ content: text });
  }
  reasoning(text: string): void {
    this.chunk({ reasoning_content: text });
  }
  toolCallStart(index: number, id: string, name: string, args = ''): void {
    this.chunk({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: args } }] });
  }
  toolCallArgs(index: number, args: string): void {
    this.chunk({ tool_calls: [{ index, function: { arguments: args } }] });
  }
  finish(reason = 'stop', usage: Usage | null = { prompt_tokens: 5, completion_tokens: 3 }): void {
    this.chunk({}, reason, usage ? { usage } : {});
    if (!this.goneFlag) this.res.end('data: [DONE]\n\n');
  }
  /** An HTTP error before any byte of the stream. */
  fail(status: number, message: string, headers: Record<string, string> = {}): void {
    this.res.writeHead(status, { 'content-type': 'application/json', ...headers });
    this.res.end(JSON.stringify({ error: { message, type: 'server_error', code: null } }));
  }
  /** An error chunk inside an open stream (how some gateways report a failure mid-reply). */
  streamError(message: string): void {
    this.open();
    this.res.write(`data: ${JSON.stringify({ error: { message, type: 'server_error', code: null } })}\n\n`);
    this.res.end();
  }
  /** The stream ends cleanly with no finish chunk (as a proxy's time-out closes it). */
  close(): void {
    this.open();
    this.res.end();
  }
  /** The socket breaks mid-stream, with no final chunk. */
  drop(): void {
    this.res.socket?.destroy();
  }
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}

export type Script = (reply: Reply) => void | Promise<void>;

export interface FakeProvider {
  baseURL: string;
  requests: RecordedRequest[];
  /** Scripts for the next streaming requests, in order; summary (non-streaming) calls do not consume them. */
  enqueue(...scripts: Script[]): void;
  /** Drops scripts no request has taken (a reply stopped before its next step leaves one). */
  clear(): void;
  /** What a non-streaming call (the rolling summary) answers. */
  summaryText: string;
  /** Chooses a script from the request before the queue is asked (several clients at once, each its own). */
  route?: (request: ChatRequest) => Script | undefined;
  close(): Promise<void>;
}

export const words = (text: string): string[] => text.match(/\S+\s*/g) ?? [];

/** Streams `text` word by word, then finishes with usage. */
export const textScript =
  (text: string, usage?: Usage | null): Script =>
  (r) => {
    for (const w of words(text)) r.text(w);
    r.finish(
      'stop',
      usage === undefined ? { prompt_tokens: 5, completion_tokens: words(text).length } : usage,
    );
  };

export async function startFakeProvider(): Promise<FakeProvider> {
  const queue: Script[] = [];
  const requests: RecordedRequest[] = [];
  const fake: FakeProvider = {
    baseURL: '',
    requests,
    summaryText: 'SUMMARY',
    enqueue: (...scripts: Script[]) => {
      queue.push(...scripts);
    },
    clear: () => {
      queue.length = 0;
    },
    close: async () => {},
  };

  const server = http.createServer(async (req, res) => {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404).end();
      return;
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw) as ChatRequest;
    requests.push({ body, headers: req.headers });
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-fake',
          object: 'chat.completion',
          created: 0,
          model: body.model,
          choices: [
            { index: 0, message: { role: 'assistant', content: fake.summaryText }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 2 },
        }),
      );
      return;
    }
    const script = fake.route?.(body) ?? queue.shift() ?? textScript('Hello from the fake Provider.');
    try {
      await script(new Reply(res, body));
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  fake.baseURL = `http://127.0.0.1:${port}/v1`;
  fake.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return fake;
}
