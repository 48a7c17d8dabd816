import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ToolSet } from 'ai';
import { createBashTool, createToolPrompt, type Sandbox } from 'bash-tool';
import { Bash } from 'just-bash';
import type { Answer, Job } from './worker.ts';

export const SANDBOX_HOME = '/home/npc';

export interface SandboxLimits {
  /** Longest a command may run before its thread is killed (the tool's own limit also applies). */
  timeoutMs: number;
  /** Bytes the Conversation's folder may hold. */
  quotaBytes: number;
  /** Largest output a command returns to the model. */
  maxOutputBytes: number;
  /** Heap of a command's thread. */
  memoryMb: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  timeoutMs: 30_000,
  quotaBytes: 100 * 1024 * 1024,
  maxOutputBytes: 64 * 1024,
  memoryMb: 256,
};

export class SandboxError extends Error {}

const WORKER = new URL('./worker.ts', import.meta.url);
const IDLE_MAX = 2;

/**
 * Threads that run sandbox commands. One command has a thread to itself; a thread that finished cleanly is kept
 * (a couple at most) for the next command, one that was killed never is. Loading just-bash takes a while, so a
 * thread is started ahead of need whenever the idle ones run out.
 */
class Threads {
  private idle: Worker[] = [];
  constructor(private readonly memoryMb: number) {}

  private spawn(): Worker {
    const worker = new Worker(WORKER, {
      execArgv: ['--import', 'tsx'],
      resourceLimits: { maxOldGenerationSizeMb: this.memoryMb, maxYoungGenerationSizeMb: 32 },
      stdout: true,
      stderr: true,
    });
    worker.unref();
    // A thread that dies while idle (or is killed) leaves the pool.
    worker.once('exit', () => {
      this.idle = this.idle.filter((w) => w !== worker);
    });
    worker.on('error', () => {});
    return worker;
  }

  warm() {
    if (this.idle.length === 0) this.idle.push(this.spawn());
  }

  take(): Worker {
    const worker = this.idle.pop() ?? this.spawn();
    this.warm();
    return worker;
  }

  give(worker: Worker) {
    if (this.idle.length < IDLE_MAX) this.idle.push(worker);
    else void worker.terminate();
  }
}

const pools = new Map<number, Threads>();
const threadsFor = (memoryMb: number) => {
  const pool = pools.get(memoryMb) ?? new Threads(memoryMb);
  pools.set(memoryMb, pool);
  return pool;
};

/** Runs one job on a thread of its own; kills the thread on the signal or past the time limit. */
function runJob(threads: Threads, job: Job, limits: SandboxLimits, signal?: AbortSignal): Promise<unknown> {
  const worker = threads.take();
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void, keep: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      if (keep) threads.give(worker);
      else void worker.terminate();
      fn();
    };
    // Killing the thread is what stops the work: V8 interrupts even a loop that never yields.
    const kill = (message: string) => settle(() => reject(new SandboxError(message)), false);
    const onAbort = () => kill('The command was stopped.');
    const timer = setTimeout(
      () => kill(`The command ran longer than ${Math.round(limits.timeoutMs / 1000)} s and was stopped.`),
      limits.timeoutMs,
    );
    const onMessage = (answer: Answer) =>
      settle(
        () =>
          answer.ok
            ? resolve(answer.value)
            : reject(
                new SandboxError(answer.quota ? answer.message : `The sandbox failed: ${answer.message}`),
              ),
        true,
      );
    const onError = (e: Error & { code?: string }) =>
      kill(
        e.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `The command ran out of memory (${limits.memoryMb} MB) and was stopped.`
          : 'The sandbox failed.',
      );
    const onExit = () => kill('The sandbox stopped.');
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    worker.postMessage(job);
  });
}

/**
 * The tool description's list of commands, found once per process by asking a throwaway in-process just-bash
 * (no user input reaches it); otherwise bash-tool would run its discovery commands on every turn's sandbox.
 */
let toolPrompt: Promise<string> | undefined;
const discoverToolPrompt = () => {
  toolPrompt ??= createToolPrompt({
    sandbox: {
      executeCommand: (command) => new Bash().exec(command),
      readFile: async () => '',
      writeFiles: async () => {},
    },
    filenames: [],
    isJustBash: true,
  });
  return toolPrompt;
};

/** The running call's abort signal (Stop or the tool's time limit), which bash-tool does not pass on. */
const callSignal = new AsyncLocalStorage<AbortSignal | undefined>();

/** The folder a Conversation's sandbox keeps its files in. */
export const sandboxFolder = (dataDir: string, conversationId: string) =>
  path.resolve(dataDir, 'sandboxes', conversationId);

/**
 * An isolated shell per Conversation: just-bash, a simulated bash over a virtual filesystem, never the host's
 * shell, each command on a thread of its own with a time limit that kills it, a heap cap and a byte quota. Only
 * the Conversation's own folder is mounted, at /home/npc, so files persist across turns; no network.
 */
export async function sandboxTools(
  dataDir: string,
  conversationId: string,
  limits: SandboxLimits = DEFAULT_SANDBOX_LIMITS,
): Promise<ToolSet> {
  const root = sandboxFolder(dataDir, conversationId);
  await mkdir(root, { recursive: true });
  const threads = threadsFor(limits.memoryMb);
  threads.warm();
  const base = {
    root,
    home: SANDBOX_HOME,
    quotaBytes: limits.quotaBytes,
    maxOutputBytes: limits.maxOutputBytes,
  };
  const run = (job: Omit<Job, keyof typeof base>) =>
    runJob(threads, { ...base, ...job }, limits, callSignal.getStore());
  const sandbox: Sandbox = {
    executeCommand: async (command) =>
      (await run({ op: 'exec', command })) as Awaited<ReturnType<Sandbox['executeCommand']>>,
    readFile: async (p) => (await run({ op: 'read', path: p })) as string,
    writeFiles: async (files) => {
      await run({ op: 'write', files });
    },
  };
  const { tools } = await createBashTool({
    sandbox,
    destination: SANDBOX_HOME,
    maxOutputLength: limits.maxOutputBytes,
    promptOptions: { toolPrompt: await discoverToolPrompt() },
  });
  // Each call runs with its own abort signal in reach of the sandbox.
  const out: ToolSet = {};
  for (const [name, t] of Object.entries(tools as ToolSet)) {
    const execute = t.execute;
    out[name] = execute
      ? {
          ...t,
          execute: (input: unknown, options: { abortSignal?: AbortSignal }) =>
            callSignal.run(options.abortSignal, () => execute(input as never, options as never)),
        }
      : t;
  }
  return out;
}

/** Deletes a Conversation's sandbox folder (when the Conversation is deleted). */
export async function removeSandbox(dataDir: string, conversationId: string): Promise<void> {
  await rm(sandboxFolder(dataDir, conversationId), { recursive: true, force: true });
}
