import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4FunctionTool,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
} from '@ai-sdk/provider';

export const DEMO_PROVIDER = 'demo';
export const DEMO_MODEL = 'scripted-demo';

/**
 * The demo Model, for an instance with no Provider key: a real AI SDK language model that streams a scripted,
 * in-character reply, so every Part kind can be seen offline. With thinking on it reasons first; with a
 * granted tool it calls it once, then answers. Its name says it is a demo wherever it is shown.
 */
export function demoModel(delayMs = 25): LanguageModelV4 {
  return {
    specificationVersion: 'v4',
    provider: DEMO_PROVIDER,
    modelId: DEMO_MODEL,
    supportedUrls: {},
    async doGenerate(options) {
      const text = summaryText(options.prompt);
      return {
        content: [{ type: 'text', text }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: usage(options.prompt, text),
        warnings: [],
      };
    },
    async doStream(options) {
      const parts = script(options);
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        async start(controller) {
          for (const part of parts) {
            if (options.abortSignal?.aborted) break;
            controller.enqueue(part);
            if (part.type === 'text-delta' || part.type === 'reasoning-delta')
              await sleep(delayMs, options.abortSignal);
          }
          controller.close();
        },
      });
      return { stream };
    },
  };
}

function script(options: LanguageModelV4CallOptions): LanguageModelV4StreamPart[] {
  const { name, job } = identity(options.prompt);
  const question = lastUserText(options.prompt);
  const toolDone = options.prompt.some((m) => m.role === 'tool');
  // Any granted tool but a hand-over: a demo Party that passed the word around would only hit the hop limit.
  const tool = !toolDone
    ? options.tools?.find(
        (t): t is LanguageModelV4FunctionTool => t.type === 'function' && t.name !== 'message_npc',
      )
    : undefined;
  const out: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }];
  const thinking = options.reasoning !== undefined && options.reasoning !== 'none';
  if (thinking && !toolDone) {
    out.push({ type: 'reasoning-start', id: 'r0' });
    for (const w of words(
      `The Player asked: "${clip(question, 80)}". As ${name}, I should answer in character.`,
    )) {
      out.push({ type: 'reasoning-delta', id: 'r0', delta: w });
    }
    out.push({ type: 'reasoning-end', id: 'r0' });
  }
  if (tool) {
    out.push({
      type: 'tool-call',
      toolCallId: `demo-call-${Date.now().toString(36)}`,
      toolName: tool.name,
      input: JSON.stringify(sampleInput(tool.inputSchema)),
    });
    out.push({
      type: 'finish',
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: usage(options.prompt, ''),
    });
    return out;
  }
  const reply = toolDone
    ? `That is what the tool gave back. As ${name}, I would take it from here — but I am the demo Model, so this is as far as my script goes.`
    : `Greetings! I am ${name}${job ? `, ${job}` : ''}. You said: “${clip(question, 120)}”. I am the demo Model: no AI Provider key is configured on this instance, so my lines are scripted. Add a key (see the README) and I will answer for real.`;
  out.push({ type: 'text-start', id: 't0' });
  for (const w of words(reply)) out.push({ type: 'text-delta', id: 't0', delta: w });
  out.push({ type: 'text-end', id: 't0' });
  out.push({
    type: 'finish',
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: usage(options.prompt, reply),
  });
  return out;
}

function identity(prompt: LanguageModelV4Prompt): { name: string; job: string } {
  const system = prompt.find((m) => m.role === 'system');
  const match = system && /You are ([^,.\n]+)(?:, ([^.\n]+))?\./.exec(system.content);
  return { name: match?.[1] ?? 'an NPC', job: match?.[2] ?? '' };
}

function lastUserText(prompt: LanguageModelV4Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i]!;
    if (m.role === 'user') return m.content.map((p) => (p.type === 'text' ? p.text : '')).join(' ');
  }
  return '';
}

function summaryText(prompt: LanguageModelV4Prompt): string {
  return `Summary (demo Model): ${clip(lastUserText(prompt).replace(/\s+/g, ' '), 400)}`;
}

/** An input that satisfies a simple JSON schema: required strings get a demo value. */
function sampleInput(schema: unknown): Record<string, unknown> {
  const s = schema as { properties?: Record<string, { type?: string }>; required?: string[] };
  const input: Record<string, unknown> = {};
  for (const key of s.required ?? []) {
    const type = s.properties?.[key]?.type;
    input[key] = type === 'number' || type === 'integer' ? 1 : type === 'boolean' ? true : 'demo';
  }
  return input;
}

const words = (text: string) => text.match(/\S+\s*/g) ?? [];
const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const chars = (prompt: LanguageModelV4Prompt) => JSON.stringify(prompt).length;

function usage(prompt: LanguageModelV4Prompt, text: string) {
  const input = Math.ceil(chars(prompt) / 4);
  const output = Math.ceil(text.length / 4);
  return {
    inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: output, text: output, reasoning: undefined },
  };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
