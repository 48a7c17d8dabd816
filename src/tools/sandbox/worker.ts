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
  /** What the Player may still store in all (ADR 0053): the folder may grow by no more than this. */
  roomBytes?: number;
  maxOutputBytes: number;
  timeoutMs: number;
  command?: string;
  path?: string;
  files?: { path: string; content: string | Uint8Array }[];
}
export type Answer = { ok: true; value: unknown } | { ok: false; message: string; quota: boolean };

async function run(job: Job): Promise<unknown> {
  const used = await usage(job.root);
  // The tighter of the folder's quota and the Player's storage left, and a refusal that names the one met.
  const byPlayer = job.roomBytes !== undefined && used.bytes + job.roomBytes < job.quotaBytes;
  const quota = byPlayer ? used.bytes + job.roomBytes! : job.quotaBytes;
  const full = byPlayer
    ? "No space left: the Player's storage is full (the Village's quota for each Player). Delete files here, or the Player can delete Conversations or attachments."
    : `No space left: this sandbox may hold ${Math.round(job.quotaBytes / 1_048_576)} MB of files.`;
  const home = new QuotaFs(job.root, quota, used, full);
  let refused = false;
  home.onRefused = () => {
    refused = true;
  };
  // The scratch tree outside the home folder is memory: bounded like everything else.
  const fs = new MountableFs({ base: new InMemoryFs(undefined, { maxTotalBytes: 32 * 1024 * 1024 }) });
  fs.mount(job.home, home);
  const bash = new Bash({
    fs,
    cwd: job.home,
    // What one command may write in all is just past the quota, so the quota is what a Player meets.
    executionLimits: {
      maxCallDepth: 50,
      maxOutputSize: job.quotaBytes + 1024 * 1024,
      maxLiveBytes: 128 * 1024 * 1024,
      maxFileSystemBytes: 32 * 1024 * 1024,
      // The host kills the process at the same time; this ends the work even if the host is gone.
      maxExecutionTimeMs: job.timeoutMs,
    },
  });
  if (job.op === 'read') return clip(await fs.readFile(job.path!), job.maxOutputBytes);
  if (job.op === 'write') {
    for (const f of job.files ?? []) await fs.writeFile(f.path, f.content);
    return null;
  }
  const result = await bash.exec(job.command!);
  // A write refused for the quota inside a command is reported as the tool failing, not as one more stderr line.
  if (refused) throw new QuotaExceededError(full);
  return {
    stdout: clip(result.stdout, job.maxOutputBytes),
    stderr: clip(result.stderr, job.maxOutputBytes),
    exitCode: result.exitCode,
  };
}

/** Only what the model can be shown crosses to the server (bash-tool and the tool limits clip it further). */
function clip(text: string, max: number): string {
  return text.length > max * 2 ? `${text.slice(0, max * 2)}\n[output clipped]` : text;
}

// The server went away (crashed, restarted): nothing is left running on its behalf.
process.on('disconnect', () => process.exit(1));

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
