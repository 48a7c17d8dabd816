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
 * in-character reply made from the Player's own words, so every Part kind can be seen offline. With thinking
 * on it reasons first; when the Player asks for what a granted tool does (remember, run, write a file…) it
 * calls it once, then answers with what came back. Its first reply says it is the demo, and its name says so
 * wherever a reply is shown.
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
  const firstTurn = !options.prompt.some((m) => m.role === 'assistant');
  const toolResult = lastToolResult(options.prompt);
  // A granted tool is used when the Player's words ask for what it does, once per reply: a believable
  // character, not one that runs a command at every turn. Never a hand-over (a demo Party would only bounce).
  const tool = toolResult === undefined ? toolFor(question, options.tools) : undefined;
  const out: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }];
  const thinking = options.reasoning !== undefined && options.reasoning !== 'none';
  if (thinking && toolResult === undefined) {
    out.push({ type: 'reasoning-start', id: 'r0' });
    const topic = topicOf(question);
    for (const w of words(
      `The Player asked: "${clip(question, 80)}". ${topic ? `It is about ${topic}. ` : ''}As ${name}${
        job ? `, ${job}` : ''
      }, I ${tool ? `can use ${tool.name} for this first` : 'should answer in my own voice'}.`,
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
      input: JSON.stringify(inputFor(tool, question)),
    });
    out.push({
      type: 'finish',
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: usage(options.prompt, ''),
    });
    return out;
  }
  const reply =
    toolResult !== undefined
      ? `Done — the tool answered: “${clip(toolResult.replace(/\s+/g, ' '), 100)}”. ${line(name, question, 1)}`
      : firstTurn
        ? `Greetings! I am ${name}${job ? `, ${job}` : ''}. ${line(name, question, 0)} (I am the demo Model: no AI Provider key is configured on this instance, so my lines are scripted from yours. A Village admin can paste a key on the Village page, and I will answer for real.)`
        : line(name, question, hash(question));
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

/** What the Player's words ask a granted tool for, by the words a person would use. */
const TOOL_CUES: Record<string, RegExp> = {
  remember: /\b(remember|note|don't forget|keep in mind)\b/i,
  recall: /\b(recall|what did i (say|tell)|do you remember)\b/i,
  bash: /\b(run|command|shell|compute|calculate|list files|script)\b/i,
  writeFile: /\b(write|save|file)\b/i,
  readFile: /\b(read|open|show) (the |my )?file\b/i,
};
function toolFor(question: string, tools: LanguageModelV4CallOptions['tools']) {
  const usable = (tools ?? []).filter(
    (t): t is LanguageModelV4FunctionTool => t.type === 'function' && t.name !== 'message_npc',
  );
  return (
    usable.find((t) => TOOL_CUES[t.name]?.test(question)) ??
    // A Skill or an MCP tool: when the Player names it.
    usable.find((t) => !TOOL_CUES[t.name] && question.toLowerCase().includes(t.name.toLowerCase()))
  );
}

/** Arguments built from the Player's words, for the tools a demo is likely to have. */
function inputFor(tool: LanguageModelV4FunctionTool, question: string): Record<string, unknown> {
  const said = clip(question.replace(/\s+/g, ' ').trim(), 200);
  const input = sampleInput(tool.inputSchema);
  for (const key of Object.keys(input)) {
    if (key === 'command') input[key] = `printf '%s\\n' ${shellQuote(said)} | tee -a notes.txt | wc -w`;
    else if (key === 'path') input[key] = 'notes.txt';
    else if (typeof input[key] === 'string') input[key] = said;
  }
  return input;
}
const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** One of a few in-character lines that take up the Player's own words. */
function line(name: string, question: string, n: number): string {
  const topic = topicOf(question);
  const said = clip(question.replace(/\s+/g, ' ').trim(), 120);
  const lines = [
    `You said: “${said}”. ${topic ? `${cap(topic)} — now there is something worth talking about.` : 'Tell me more.'}`,
    `${topic ? `${cap(topic)}, you say?` : 'I see.'} ${name} has heard stranger things in this village. What happened next?`,
    `“${said}” — I will think on that. ${topic ? `What do you want to know about ${topic}?` : 'Go on.'}`,
    `Hmm. ${topic ? `If it is ${topic} you are after, ` : ''}start from the beginning, and I will follow.`,
  ];
  return lines[n % lines.length]!;
}

/** The longest words of the Player's Message: what it is about, as far as a script can tell. */
function topicOf(question: string): string {
  const found = question.toLowerCase().match(/\p{L}[\p{L}'-]{3,}/gu) ?? [];
  const common = new Set([
    'what',
    'where',
    'when',
    'which',
    'there',
    'about',
    'would',
    'could',
    'should',
    'please',
    'think',
    'your',
    'have',
    'with',
    'that',
    'this',
    'from',
    'tell',
  ]);
  const picked = [...new Set(found)].filter((w) => !common.has(w)).sort((a, b) => b.length - a.length);
  return picked.slice(0, 2).join(' and ');
}
const cap = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
const hash = (text: string) => [...text].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7);

/** The output of the tool call this reply made, when the prompt ends with one. */
function lastToolResult(prompt: LanguageModelV4Prompt): string | undefined {
  const last = prompt.at(-1);
  if (last?.role !== 'tool') return undefined;
  const result = last.content.find((p) => p.type === 'tool-result');
  if (result?.type !== 'tool-result') return '';
  const output = result.output as { type: string; value?: unknown };
  return typeof output.value === 'string' ? output.value : JSON.stringify(output.value ?? '');
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
