import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { nodeFlags } from '../../scripts/node-flags.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Every server this process started and has not seen exit: killed when this process exits, however it exits. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * The real server as its own OS process (`node --import tsx src/main.ts`, with npm start's flags), so a test can kill -9 it. A server that
 * has not said it is listening within `startTimeoutMs` is killed and the promise rejects: none is left behind.
 */
export async function spawnServer(
  env: Record<string, string>,
  { startTimeoutMs = 30_000 } = {},
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...nodeFlags(), '--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start within ${startTimeoutMs} ms:\n${output}`));
    }, startTimeoutMs);
    const check = () => {
      const m = /listening on (http:\/\/[^\s"]+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout?.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    kill: (signal = 'SIGTERM') =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
}
