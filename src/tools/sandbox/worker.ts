import { Bash, InMemoryFs, MountableFs } from 'just-bash';
import { QuotaExceededError, QuotaFs, usage } from './quota.ts';

/**
 * A sandbox command's process: just-bash over the Conversation's folder (mounted at the home folder, under a
 * byte quota) and an empty in-memory tree, off the server's event loop. The host kills the whole process when
 * the command runs past its time or the Player stops it; its heap is capped and it runs at a lower priority,
 * with no secrets in its environment: nothing here can hold up anyone else's request.
 */
export interface Job {
  op: 'exec' | 'read' | 'write';
  root: string;
  home: string;
  quotaBytes: number;
  maxOutputBytes: number;
  command?: string;
  path?: string;
  files?: { path: string; content: string | Uint8Array }[];
}
export type Answer = { ok: true; value: unknown } | { ok: false; message: string; quota: boolean };

async function run(job: Job): Promise<unknown> {
  const home = new QuotaFs(job.root, job.quotaBytes, await usage(job.root));
  let refused = false;
  home.onRefused = () => {
    refused = true;
  };
  const fs = new MountableFs({ base: new InMemoryFs() });
  fs.mount(job.home, home);
  const bash = new Bash({
    fs,
    cwd: job.home,
    // What one command may write in all is just past the quota, so the quota is what a Player meets.
    executionLimits: { maxCallDepth: 50, maxOutputSize: job.quotaBytes + 1024 * 1024 },
  });
  if (job.op === 'read') return fs.readFile(job.path!);
  if (job.op === 'write') {
    for (const f of job.files ?? []) await fs.writeFile(f.path, f.content);
    return null;
  }
  const result = await bash.exec(job.command!);
  // A write refused for the quota inside a command is reported as the tool failing, not as one more stderr line.
  if (refused)
    throw new QuotaExceededError(
      `No space left: this sandbox may hold ${Math.round(job.quotaBytes / 1_048_576)} MB of files.`,
    );
  // Only what the model can be shown crosses to the server's thread (bash-tool clips it further).
  const clip = (text: string) =>
    text.length > job.maxOutputBytes * 2
      ? `${text.slice(0, job.maxOutputBytes * 2)}\n[output clipped]`
      : text;
  return { stdout: clip(result.stdout), stderr: clip(result.stderr), exitCode: result.exitCode };
}

process.on('message', (job: Job) => {
  run(job).then(
    (value) => process.send!({ ok: true, value } satisfies Answer),
    (e: Error) =>
      process.send!({
        ok: false,
        message: e.message,
        quota: e instanceof QuotaExceededError,
      } satisfies Answer),
  );
});
