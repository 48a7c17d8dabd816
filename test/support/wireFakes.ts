import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A Provider over real HTTP for the real AI SDK providers to talk to: each request is recorded and answered
 * with a scripted SSE stream. The script builders below speak the wire formats of Anthropic Messages and
 * OpenAI Responses, written from their API references and from what @ai-sdk/anthropic and @ai-sdk/openai
 * parse (both read each event's JSON `type`; the `event:` line is there because the real APIs send it).
 */
export type WireStep =
  | { event?: string; data: unknown }
  /** Wait before the next step. */
  | { pause: number }
  /** The connection breaks here: what was written before is delivered, then the socket dies. */
  | { cut: true }
  /** Bytes written as they are, not framed as an SSE event (Gemini's in-band errors are raw JSON lines). */
  | { raw: string };

export interface WireRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export type WireScript = (request: WireRequest) => WireStep[];

export interface WireFake {
  /** `http://127.0.0.1:<port>`: append the path prefix the SDK expects (e.g. `/v1`). */
  origin: string;
  requests: WireRequest[];
  /** Scripts for the next requests, in order. */
  enqueue(...scripts: WireScript[]): void;
  close(): Promise<void>;
}

export async function startWireFake(): Promise<WireFake> {
  const queue: WireScript[] = [];
  const requests: WireRequest[] = [];
  const server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const request: WireRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {},
    };
    requests.push(request);
    const script = queue.shift();
    if (!script) {
      // A 400, not a 5xx: the SDK would retry a 5xx with backoff and slow the failing test down.
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { type: 'invalid_request_error', message: 'no script queued' } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const step of script(request)) {
      if ('pause' in step) await new Promise((r) => setTimeout(r, step.pause));
      else if ('cut' in step) {
        // Give the client the bytes already written, then break the socket with no end of stream.
        await new Promise((r) => setTimeout(r, 50));
        res.socket?.destroy();
        return;
      } else if ('raw' in step) {
        await new Promise<void>((r) => res.write(step.raw, () => r()));
      } else {
        const head = step.event ? `event: ${step.event}\n` : '';
        await new Promise<void>((r) => res.write(`${head}data: ${JSON.stringify(step.data)}\n\n`, () => r()));
      }
    }
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    enqueue: (...scripts) => {
      queue.push(...scripts);
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Anthropic Messages streaming: https://docs.anthropic.com/en/api/messages-streaming

/** An Anthropic event: the JSON repeats the event name as its `type`. */
const anthropicEvent = (type: string, data: Record<string, unknown> = {}): WireStep => ({
  event: type,
  data: { type, ...data },
});

export interface AnthropicInputUsage {
  input_tokens: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export const anthropic = {
  messageStart: (model: string, usage: AnthropicInputUsage): WireStep[] => [
    anthropicEvent('message_start', {
      message: {
        id: 'msg_wirefake',
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { cache_read_input_tokens: 0, cache_creation_input_tokens: 0, ...usage, output_tokens: 1 },
      },
    }),
    anthropicEvent('ping'),
  ],
  /** A thinking block: its deltas, then the signature that closes every thinking block. */
  thinking: (index: number, deltas: string[]): WireStep[] => [
    anthropicEvent('content_block_start', {
      index,
      content_block: { type: 'thinking', thinking: '', signature: '' },
    }),
    ...deltas.map((thinking) =>
      anthropicEvent('content_block_delta', { index, delta: { type: 'thinking_delta', thinking } }),
    ),
    anthropicEvent('content_block_delta', {
      index,
      delta: { type: 'signature_delta', signature: `sig-${index}` },
    }),
    anthropicEvent('content_block_stop', { index }),
  ],
  /** A text block; `open` leaves it without its stop (for a stream that ends in the middle of it). */
  text: (index: number, deltas: string[], open = false): WireStep[] => [
    anthropicEvent('content_block_start', { index, content_block: { type: 'text', text: '' } }),
    ...deltas.map((text) =>
      anthropicEvent('content_block_delta', { index, delta: { type: 'text_delta', text } }),
    ),
    ...(open ? [] : [anthropicEvent('content_block_stop', { index })]),
  ],
  /** A tool_use block; `open` leaves it without its stop (the output limit cut its input). */
  toolUse: (index: number, id: string, name: string, jsonChunks: string[], open = false): WireStep[] => [
    anthropicEvent('content_block_start', {
      index,
      content_block: { type: 'tool_use', id, name, input: {} },
    }),
    ...jsonChunks.map((partial_json) =>
      anthropicEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }),
    ),
    ...(open ? [] : [anthropicEvent('content_block_stop', { index })]),
  ],
  /** The end: why it stopped, the output tokens (thinking ones among them when given), then message_stop. */
  finish: (
    stop_reason: string,
    usage: { output_tokens: number; thinking_tokens?: number },
    stop_details: Record<string, unknown> | null = null,
  ): WireStep[] => [
    anthropicEvent('message_delta', {
      delta: { stop_reason, stop_sequence: null, stop_details },
      usage: {
        output_tokens: usage.output_tokens,
        ...(usage.thinking_tokens === undefined
          ? {}
          : { output_tokens_details: { thinking_tokens: usage.thinking_tokens } }),
      },
    }),
    anthropicEvent('message_stop'),
  ],
  /** An error inside an open stream (the API then closes it), e.g. `overloaded_error`. */
  error: (type: string, message: string): WireStep[] => [
    anthropicEvent('error', { error: { type, message } }),
  ],
};

// ---------------------------------------------------------------------------------------------------------
// OpenAI Responses streaming: https://platform.openai.com/docs/api-reference/responses-streaming

type OpenAIEvent = { type: string; [key: string]: unknown } | { pause: number } | { cut: true };

/** Numbers the events (`sequence_number`, which error events must carry) and frames them as SSE. */
export function openaiStream(...groups: OpenAIEvent[][]): WireStep[] {
  let sequence = 0;
  return groups.flat().map((e): WireStep => {
    if (!('type' in e)) return e as WireStep;
    return { event: e.type, data: { ...e, sequence_number: sequence++ } };
  });
}

const response = (model: string, status: string, extra: Record<string, unknown> = {}) => ({
  id: 'resp_wirefake',
  object: 'response',
  created_at: 1_750_000_000,
  status,
  model,
  output: [],
  error: null,
  incomplete_details: null,
  usage: null,
  ...extra,
});

export interface OpenAIUsage {
  input_tokens: number;
  cached_tokens?: number;
  output_tokens: number;
  reasoning_tokens?: number;
}

export const openai = {
  created: (model: string): OpenAIEvent[] => [
    { type: 'response.created', response: response(model, 'in_progress') },
    { type: 'response.in_progress', response: response(model, 'in_progress') },
  ],
  /** A reasoning item whose summary comes in sections (summary parts), each streamed as deltas. */
  reasoning: (output_index: number, item_id: string, sections: string[][]): OpenAIEvent[] => {
    const at = { item_id, output_index };
    return [
      {
        type: 'response.output_item.added',
        output_index,
        item: { id: item_id, type: 'reasoning', summary: [] },
      },
      ...sections.flatMap((deltas, summary_index): OpenAIEvent[] => {
        const text = deltas.join('');
        return [
          {
            type: 'response.reasoning_summary_part.added',
            ...at,
            summary_index,
            part: { type: 'summary_text', text: '' },
          },
          ...deltas.map((delta) => ({
            type: 'response.reasoning_summary_text.delta',
            ...at,
            summary_index,
            delta,
          })),
          { type: 'response.reasoning_summary_text.done', ...at, summary_index, text },
          {
            type: 'response.reasoning_summary_part.done',
            ...at,
            summary_index,
            part: { type: 'summary_text', text },
          },
        ];
      }),
      {
        type: 'response.output_item.done',
        output_index,
        item: {
          id: item_id,
          type: 'reasoning',
          summary: sections.map((d) => ({ type: 'summary_text', text: d.join('') })),
        },
      },
    ];
  },
  /** A message item streamed as output_text deltas; `open` leaves it unfinished. */
  message: (output_index: number, item_id: string, deltas: string[], open = false): OpenAIEvent[] => {
    const at = { item_id, output_index, content_index: 0 };
    const text = deltas.join('');
    const item = { id: item_id, type: 'message', role: 'assistant' };
    return [
      {
        type: 'response.output_item.added',
        output_index,
        item: { ...item, status: 'in_progress', content: [] },
      },
      {
        type: 'response.content_part.added',
        ...at,
        part: { type: 'output_text', text: '', annotations: [] },
      },
      ...deltas.map((delta) => ({ type: 'response.output_text.delta', ...at, delta, logprobs: [] })),
      ...(open
        ? []
        : [
            { type: 'response.output_text.done', ...at, text, logprobs: [] },
            {
              type: 'response.content_part.done',
              ...at,
              part: { type: 'output_text', text, annotations: [] },
            },
            {
              type: 'response.output_item.done',
              output_index,
              item: {
                ...item,
                status: 'completed',
                content: [{ type: 'output_text', text, annotations: [] }],
              },
            },
          ]),
    ];
  },
  /** A message item whose content is a refusal (the model declining), streamed as refusal deltas. */
  refusal: (output_index: number, item_id: string, deltas: string[]): OpenAIEvent[] => {
    const at = { item_id, output_index, content_index: 0 };
    const refusal = deltas.join('');
    const item = { id: item_id, type: 'message', role: 'assistant' };
    return [
      {
        type: 'response.output_item.added',
        output_index,
        item: { ...item, status: 'in_progress', content: [] },
      },
      { type: 'response.content_part.added', ...at, part: { type: 'refusal', refusal: '' } },
      ...deltas.map((delta) => ({ type: 'response.refusal.delta', ...at, delta })),
      { type: 'response.refusal.done', ...at, refusal },
      { type: 'response.content_part.done', ...at, part: { type: 'refusal', refusal } },
      {
        type: 'response.output_item.done',
        output_index,
        item: { ...item, status: 'completed', content: [{ type: 'refusal', refusal }] },
      },
    ];
  },
  completed: (model: string, u: OpenAIUsage): OpenAIEvent[] => [
    {
      type: 'response.completed',
      response: response(model, 'completed', {
        usage: {
          input_tokens: u.input_tokens,
          input_tokens_details: { cached_tokens: u.cached_tokens ?? 0 },
          output_tokens: u.output_tokens,
          output_tokens_details: { reasoning_tokens: u.reasoning_tokens ?? 0 },
          total_tokens: u.input_tokens + u.output_tokens,
        },
      }),
    },
  ],
  /** A function call item: its arguments streamed as deltas, then done. */
  functionCall: (
    output_index: number,
    item_id: string,
    call_id: string,
    name: string,
    chunks: string[],
  ): OpenAIEvent[] => {
    const args = chunks.join('');
    const item = { id: item_id, type: 'function_call', call_id, name };
    return [
      {
        type: 'response.output_item.added',
        output_index,
        item: { ...item, arguments: '', status: 'in_progress' },
      },
      ...chunks.map((delta) => ({
        type: 'response.function_call_arguments.delta',
        item_id,
        output_index,
        delta,
      })),
      { type: 'response.function_call_arguments.done', item_id, output_index, arguments: args },
      {
        type: 'response.output_item.done',
        output_index,
        item: { ...item, arguments: args, status: 'completed' },
      },
    ];
  },
  /** The response stopped early (its terminal event), e.g. `max_output_tokens`, with the usage so far. */
  incomplete: (model: string, reason: string, u: OpenAIUsage): OpenAIEvent[] => [
    {
      type: 'response.incomplete',
      response: response(model, 'incomplete', {
        incomplete_details: { reason },
        usage: {
          input_tokens: u.input_tokens,
          input_tokens_details: { cached_tokens: u.cached_tokens ?? 0 },
          output_tokens: u.output_tokens,
          output_tokens_details: { reasoning_tokens: u.reasoning_tokens ?? 0 },
          total_tokens: u.input_tokens + u.output_tokens,
        },
      }),
    },
  ],
  /** The response failed server-side mid-stream (its terminal event). */
  failed: (model: string, code: string, message: string): OpenAIEvent[] => [
    { type: 'response.failed', response: response(model, 'failed', { error: { code, message } }) },
  ],
  /** A bare `error` event inside the stream. */
  error: (code: string, message: string): OpenAIEvent[] => [{ type: 'error', code, message, param: null }],
};

// ---------------------------------------------------------------------------------------------------------
// Gemini streamGenerateContent (alt=sse): https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent

export interface GeminiUsage {
  promptTokenCount: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
}

const geminiUsage = (u: GeminiUsage) => ({
  ...u,
  totalTokenCount: u.promptTokenCount + (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0),
});

export const gemini = {
  /**
   * One chunk of the candidate: its parts (thoughts flagged `thought: true`), and on the last one the finish
   * reason. Gemini sends a running usageMetadata on every chunk, the final one with the finish.
   */
  chunk: (
    parts: Record<string, unknown>[],
    usage: GeminiUsage,
    finishReason?: 'STOP' | 'MAX_TOKENS' | 'SAFETY' | 'OTHER',
  ): WireStep => ({
    data: {
      candidates: [
        { content: { role: 'model', parts }, index: 0, ...(finishReason ? { finishReason } : {}) },
      ],
      usageMetadata: geminiUsage(usage),
      modelVersion: 'gemini-fake',
      responseId: 'resp-wirefake',
    },
  }),
  thought: (text: string) => ({ text, thought: true }),
  text: (text: string) => ({ text }),
  /**
   * A failure after the stream began, the way Gemini sends it: the error object as raw, pretty-printed JSON
   * lines inside the 200 stream, not an SSE event (Google's own SDK reads them line by line; an SSE reader
   * skips them, and the stream just ends).
   */
  inbandError: (code: number, status: string, message: string): WireStep => ({
    raw: `${JSON.stringify({ error: { code, message, status } }, null, 2)}\n`,
  }),
};
