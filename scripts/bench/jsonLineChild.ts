// A helper process of the bench (the load driver, the turn section's fake Provider) that talks in JSON lines: one
// line in, one line out. Every answer is awaited for a bounded time: a child that is alive but silent fails its
// figure (and is killed) instead of hanging the whole run, and one that exits fails at once.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

/** Longer than any one phase of the bench takes, short enough that a silent child costs minutes, not the run. */
const ANSWER_MS = 300_000;

/** `flags`: Node's, before the file (a measured side runs with the server's, `nodeFlags()`). */
export function jsonLineChild(file: string, answerMs = ANSWER_MS, flags: string[] = []) {
  const name = path.basename(file);
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', file], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  // A child that died (or failed to start) is told by `next`'s end of lines: a write to it then fails with EPIPE,
  // which without a listener would end the whole bench.
  let failed: Error | undefined;
  child.on('error', (e) => {
    failed = e;
  });
  child.stdin!.on('error', () => {});
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const close = () => {
    child.stdin!.end();
    child.kill();
  };
  /** The child's next line, parsed. */
  const next = async <T>(): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        close();
        reject(new Error(`${name} said nothing for ${answerMs / 1000} s: killed`));
      }, answerMs);
    });
    try {
      const line = await Promise.race([lines.next(), silent]);
      if (line.done)
        throw new Error(`${name} exited before it answered${failed ? `: ${failed.message}` : ''}`);
      return JSON.parse(line.value) as T;
    } finally {
      clearTimeout(timer);
    }
  };
  return {
    pid: child.pid,
    next,
    /** Sends one line and waits for the answer. */
    ask: <T>(message: unknown): Promise<T> => {
      child.stdin!.write(`${JSON.stringify(message)}\n`);
      return next<T>();
    },
    close,
  };
}
