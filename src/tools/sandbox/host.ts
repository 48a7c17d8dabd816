import { AsyncLocalStorage } from 'node:async_hooks';
import { type ChildProcess, fork } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { setPriority } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ToolSet } from 'ai';
import { createBashTool, createToolPrompt, type Sandbox } from 'bash-tool';
import { Bash } from 'just-bash';
import { metrics } from '../../metrics/index.ts';
import { FairSlots, SlotDeadlineError } from '../../slots/index.ts';
import { MAX_WRITE_BACK_FILES, type SandboxStore } from './store.ts';
import type { Answer, Job } from './worker.ts';

export const SANDBOX_HOME = '/home/npc';

export interface SandboxLimits {
  /** Longest a command may run before its thread is killed (the tool's own limit also applies). */
  timeoutMs: number;
  /** Bytes the Conversation's folder may hold. */
  quotaBytes: number;
  /** Largest output a command returns to the model. */
  maxOutputBytes: number;
  /** Heap of a command's process. */
  memoryMb: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  timeoutMs: 30_000,
  quotaBytes: 100 * 1024 * 1024,
  maxOutputBytes: 64 * 1024,
  memoryMb: 256,
};

class SandboxError extends Error {}

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));
const IDLE_MAX = 2;
/** Sandbox processes yield the CPU to the server: a busy command cannot slow anyone's request. */
const NICENESS = 10;

/**
 * Processes that run sandbox commands. One command has a process to itself; one that finished cleanly is kept
 * (a couple at most) for the next command, one that was killed never is. Loading just-bash takes a while, so a
 * process is started ahead of need whenever the idle ones run out.
 */
class Processes {
  private idle: ChildProcess[] = [];
  constructor(private readonly memoryMb: number) {}

  private spawn(): ChildProcess {
    const child = fork(WORKER, [], {
      execArgv: ['--import', 'tsx', `--max-old-space-size=${this.memoryMb}`],
      // Nothing of the server's environment (keys, database URL) reaches a sandbox.
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production' },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    // The last words of a process that dies (an out-of-memory abort says so on stderr).
    let said = '';
    child.stderr?.on('data', (d: Buffer) => {
      said = (said + d.toString()).slice(-2000);
    });
    (child as ChildProcess & { lastWords: () => string }).lastWords = () => said;
    child.once('exit', () => {
      this.idle = this.idle.filter((c) => c !== child);
    });
    child.on('error', () => {});
    idleRef(child, false);
    return child;
  }

  warm() {
    if (this.idle.length === 0) this.idle.push(this.spawn());
  }

  take(): ChildProcess {
    const child = this.idle.pop() ?? this.spawn();
    this.warm();
    idleRef(child, true);
    yieldCpu(child);
    return child;
  }

  stop() {
    for (const child of this.idle.splice(0)) child.kill('SIGKILL');
  }

  give(child: ChildProcess) {
    idleRef(child, false);
    if (this.idle.length < IDLE_MAX && child.connected) this.idle.push(child);
    else child.kill('SIGKILL');
  }
}

/**
 * A process yields the CPU once it is given a command (what a Player runs is what may spin), not while it loads:
 * a niced start took tens of seconds behind busy processes, and the next Player's `echo` waited on it.
 */
function yieldCpu(child: ChildProcess) {
  if (!child.pid) return;
  try {
    setPriority(child.pid, NICENESS);
  } catch {
    // Not permitted here: the process still runs, at the server's priority.
  }
}

/** An idle process never keeps the server running; a busy one does, until its answer arrives. */
function idleRef(child: ChildProcess, busy: boolean) {
  const channel = (child as unknown as { channel?: { ref(): void; unref(): void } }).channel;
  if (busy) {
    child.ref();
    channel?.ref();
  } else {
    child.unref();
    channel?.unref();
  }
}

const pools = new Map<number, Processes>();
const processesFor = (memoryMb: number) => {
  const pool = pools.get(memoryMb) ?? new Processes(memoryMb);
  pools.set(memoryMb, pool);
  return pool;
};

/**
 * Sandbox commands running at once, across all Conversations: at most two of them one Player's, and the last
 * free one kept for a Player running none, shared fairly (ADR 0057). A command waits at most SANDBOX_WAIT_MS for
 * its slot — a wait the tool's time limit does not count — and its own limit starts when it has one.
 */
export const SANDBOX_WAIT_MS = 10_000;
const commands = new FairSlots({
  capacity: 4,
  perPlayer: 2,
  reserve: 1,
  queuePerPlayer: 4,
  waitMs: SANDBOX_WAIT_MS,
  holdMs: DEFAULT_SANDBOX_LIMITS.timeoutMs,
  messages: {
    queueFull: 'Four of your sandbox commands are already waiting: wait for them to finish.',
    busy: `The sandbox is busy with other commands on this server: this one waited ${SANDBOX_WAIT_MS / 1000} s and did not run. Try again in a moment.`,
  },
});
/** Commands running now, in all and for one Player (for tests). */
export const commandsRunning = () => commands.held;
export const commandsRunningBy = (owner: string) => commands.heldBy(owner);
/** One command at a time per folder: two at once would each count the quota as theirs. */
const folders = new Map<string, Promise<unknown>>();

/** Runs `work` when nothing else uses the Conversation's folder (a command, a write-back, a `share_file`). */
export async function withFolder<T>(root: string, work: () => Promise<T>): Promise<T> {
  const before = folders.get(root) ?? Promise.resolve();
  const mine = before.catch(() => {}).then(work);
  folders.set(root, mine);
  try {
    return await mine;
  } finally {
    if (folders.get(root) === mine) folders.delete(root);
  }
}

/**
 * Runs one job in a process of its own, in one of the instance's command slots, as `owner` (a Player). With a
 * store, the folder is brought up to date from PostgreSQL first and what the job changed is written back after
 * (even when it was killed part-way: what it wrote is what the folder holds). The run and the write-back are
 * under the command's time limit, counted from when its slot is granted: past it, or on Stop, the command is
 * killed and the write-back stops between batches, so the folder is free again at once.
 */
function runJob(
  pool: Processes,
  job: Job,
  limits: SandboxLimits,
  owner: string,
  signal?: AbortSignal,
  store?: SandboxStore,
): Promise<unknown> {
  return withFolder(job.root, async () => {
    // Bringing the folder up to date holds the folder, not one of the instance's command slots.
    await store?.pull();
    // What the Player may still store (ADR 0053): the folder may grow by that much at most in this command.
    const roomBytes = job.op === 'read' ? undefined : await store?.room();
    const asked = performance.now();
    return commands.run(
      owner,
      async (deadline) => {
        const waited = (performance.now() - asked) / 1000;
        if (waited > 0.005) metrics.sandboxSlotWaits.observe(waited);
        let out: unknown;
        try {
          out = await runNow(pool, { ...job, roomBytes }, limits, deadline);
        } catch (e) {
          if (job.op !== 'read') await store?.push(deadline, writeBackLimits(limits)).catch(() => {});
          throw e;
        }
        if (job.op !== 'read')
          await store?.push(deadline, writeBackLimits(limits)).catch((e: unknown) => {
            if (!deadline.aborted) throw e;
            throw new SandboxError(
              `${stopReason(deadline, limits).message} Its files were still being saved: those not saved yet stay in this sandbox and are saved after its next command.`,
            );
          });
        return out;
      },
      { signal, holdMs: limits.timeoutMs },
    );
  });
}

const writeBackLimits = (limits: SandboxLimits) => ({
  files: MAX_WRITE_BACK_FILES,
  bytes: limits.quotaBytes,
});

/** Why a command's signal aborted, said for the model: its time limit, or Stop. */
function stopReason(signal: AbortSignal, limits: SandboxLimits): SandboxError {
  return new SandboxError(
    signal.reason instanceof SlotDeadlineError
      ? `The command ran longer than ${Math.round(limits.timeoutMs / 1000)} s and was stopped.`
      : 'The command was stopped.',
  );
}

function runNow(pool: Processes, job: Job, limits: SandboxLimits, signal?: AbortSignal): Promise<unknown> {
  const child = pool.take();
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void, keep: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (keep) pool.give(child);
      else child.kill('SIGKILL');
      fn();
    };
    // Killing the process is what stops the work, whatever the command is doing.
    const kill = (message: string) => settle(() => reject(new SandboxError(message)), false);
    const onAbort = () => kill(stopReason(signal!, limits).message);
    // The worker's own limit, a little later: the slot's deadline is what stops a command.
    const timer = setTimeout(
      () => kill(`The command ran longer than ${Math.round(limits.timeoutMs / 1000)} s and was stopped.`),
      job.timeoutMs + 1000,
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
    const onExit = () =>
      kill(
        /heap out of memory|Allocation failed/i.test(
          (child as ChildProcess & { lastWords(): string }).lastWords(),
        )
          ? `The command ran out of memory (${limits.memoryMb} MB) and was stopped.`
          : 'The sandbox stopped unexpectedly.',
      );
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    child.on('message', onMessage);
    child.on('exit', onExit);
    child.send(job);
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
 * shell, each command in a process of its own with a time limit that kills it, a heap cap, a lower priority and
 * a byte quota. Only
 * the Conversation's own folder is mounted, at /home/npc, so files persist across turns; no network.
 */
export async function sandboxTools(
  dataDir: string,
  conversationId: string,
  limits: SandboxLimits = DEFAULT_SANDBOX_LIMITS,
  /** Where the files live between commands (PostgreSQL); without it, only on this disk. */
  store?: SandboxStore,
  /** Whose command it is (the Player): one Player's commands take at most two of the instance's slots. */
  owner = conversationId,
): Promise<ToolSet> {
  const root = sandboxFolder(dataDir, conversationId);
  await mkdir(root, { recursive: true });
  const pool = processesFor(limits.memoryMb);
  pool.warm();
  const base = {
    root,
    home: SANDBOX_HOME,
    quotaBytes: limits.quotaBytes,
    maxOutputBytes: limits.maxOutputBytes,
    timeoutMs: limits.timeoutMs,
  };
  const run = (job: Omit<Job, keyof typeof base>) =>
    runJob(pool, { ...base, ...job }, limits, owner, callSignal.getStore(), store);
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

/** Deletes a Conversation's sandbox folder (when the Conversation is deleted; its stored files go with its rows). */
export async function removeSandbox(dataDir: string, conversationId: string): Promise<void> {
  const root = sandboxFolder(dataDir, conversationId);
  // After whatever the folder is doing (a refresh or a write-back still running would write it back).
  await withFolder(root, async () => {
    await rm(root, { recursive: true, force: true });
    await rm(`${root}.manifest.json`, { force: true });
  });
}

/** Ends the idle sandbox processes (at shutdown; busy ones end with their command or their server). */
export function stopSandboxes(): void {
  for (const pool of pools.values()) pool.stop();
}
