import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ToolSet } from 'ai';
import { createBashTool } from 'bash-tool';
import { Bash, InMemoryFs, MountableFs, ReadWriteFs } from 'just-bash';
import { DEFAULT_SANDBOX_LIMITS, SANDBOX_HOME, sandboxTools } from '../../src/tools/sandbox/host.ts';
import type { Figure } from '../bench.ts';
import { round, sideBySide, spreadOf } from './stats.ts';

/**
 * The cost of isolating the sandbox: a trivial command through the bash tool as an NPC calls it, in a process
 * of its own (today) ÷ the same tool over just-bash on the server's own thread (as before), side by side.
 */
export async function* sandboxFigures(): AsyncGenerator<Figure> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'av-bench-sandbox-'));
  try {
    const isolated = await sandboxTools(dir, 'isolated', DEFAULT_SANDBOX_LIMITS);
    const root = path.join(dir, 'inline');
    await mkdir(root, { recursive: true });
    const fs = new MountableFs({ base: new InMemoryFs() });
    fs.mount(SANDBOX_HOME, new ReadWriteFs({ root }));
    const { tools: inline } = await createBashTool({
      sandbox: new Bash({ fs, cwd: SANDBOX_HOME, executionLimits: { maxCallDepth: 50 } }),
      destination: SANDBOX_HOME,
    });
    const call = (tools: ToolSet) => async () => {
      const execute = tools.bash!.execute! as (
        input: unknown,
        options: unknown,
      ) => Promise<{ stdout: string }>;
      const out = await execute(
        { command: 'echo hi > a.txt && cat a.txt' },
        { toolCallId: 'bench', messages: [] },
      );
      if (out.stdout !== 'hi\n') throw new Error(`the sandbox answered ${JSON.stringify(out)}`);
    };
    const p = await sideBySide(60, 5, call(isolated), call(inline as ToolSet));
    const { a, b } = p;
    yield {
      figure: 'sandbox_command_overhead',
      value: round(p.ratio),
      unit: 'ratio',
      target: '<= 20',
      ...spreadOf(p),
      isolated_ms: round(a, 2),
      in_process_ms: round(b, 2),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
