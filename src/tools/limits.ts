import type { Tool, ToolSet } from 'ai';

export interface ToolLimits {
  /** Longest a call may run; past it the call fails with that reason and the turn goes on. */
  timeoutMs: number;
  /** Largest output, as JSON, a call may return to the model. */
  maxOutputBytes: number;
}

export const DEFAULT_LIMITS: ToolLimits = { timeoutMs: 30_000, maxOutputBytes: 64 * 1024 };

export class ToolLimitError extends Error {}

/**
 * Every Tool runs under a time limit and an output size limit. A limit hit throws, which the AI SDK turns into
 * a failed tool call with this message — a clear reason, never a hung turn. The turn's abort signal (Stop) is
 * combined with the timeout, so stopping aborts running tools too.
 */
export function limitTools(
  tools: ToolSet,
  limits: ToolLimits,
  /**
   * Time a Tool may spend waiting for one of the instance's shared slots on top of its limit, by Tool name: a
   * sandbox command's limit starts when its slot is granted (it bounds the wait itself, with its own error).
   */
  waitAllowanceMs: Record<string, number> = {},
): ToolSet {
  const out: ToolSet = {};
  for (const [name, t] of Object.entries(tools)) {
    const execute = (t as Tool).execute;
    if (!execute) {
      out[name] = t;
      continue;
    }
    out[name] = {
      ...t,
      execute: async (input: unknown, options: { abortSignal?: AbortSignal }) => {
        const timeout = AbortSignal.timeout(limits.timeoutMs + (waitAllowanceMs[name] ?? 0));
        const signal = options.abortSignal ? AbortSignal.any([options.abortSignal, timeout]) : timeout;
        const run = Promise.resolve(execute(input as never, { ...options, abortSignal: signal } as never));
        const timer = new Promise<never>((_, reject) =>
          signal.addEventListener(
            'abort',
            () =>
              reject(
                new ToolLimitError(
                  timeout.aborted
                    ? `${name} took longer than ${Math.round((limits.timeoutMs + (waitAllowanceMs[name] ?? 0)) / 1000)} s and was stopped.`
                    : `${name} was stopped.`,
                ),
              ),
            { once: true },
          ),
        );
        const output = await Promise.race([run, timer]);
        const size = Buffer.byteLength(JSON.stringify(output ?? null));
        if (size > limits.maxOutputBytes) {
          throw new ToolLimitError(
            `${name} returned ${size.toLocaleString('en')} bytes; the limit is ${limits.maxOutputBytes.toLocaleString('en')}.`,
          );
        }
        return output;
      },
    } as Tool;
  }
  return out;
}
