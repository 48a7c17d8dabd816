import { open, realpath } from 'node:fs/promises';
import path from 'node:path';
import { tool } from 'ai';
import { z } from 'zod';
import { type KeepLimits, keepFile, SNIFF_BYTES } from '../attachments/index.ts';
import type { Sql } from '../db/index.ts';
import type { FilePart } from '../parts/index.ts';
import { SANDBOX_HOME, sandboxFolder, withFolder } from './sandbox/host.ts';

/** The Village's limits for uploads, shared files included in the Player's space. */
export type ShareLimits = KeepLimits;

/** Files one reply may share: each is stored, so a reply cannot fill the store in a loop of calls. */
export const SHARES_PER_REPLY = 10;

/** What `share_file` answers: the file the Player now sees in the reply (see `sharedFile`). */
export interface Shared {
  shared: FilePart;
}

/**
 * `share_file`: hands the Player a file from the Conversation's sandbox, shown in the reply as a file they can
 * download. Only a file inside the sandbox's folder (no path or link out of it), of an accepted kind (sniffed from
 * its bytes) and within the Village's size limit. The bytes are copied into the attachment store, so the Player
 * keeps the file as it was when shared.
 */
export function shareFileTool(
  sql: Sql,
  ctx: { dataDir: string; playerId: string; conversationId: string; store?: { pull(): Promise<void> } },
  limits: ShareLimits,
) {
  const root = sandboxFolder(ctx.dataDir, ctx.conversationId);
  let shared = 0;
  return tool({
    description: `Give the Player a file from your sandbox (under ${SANDBOX_HOME}); it appears in your reply for them to open or download.`,
    inputSchema: z.object({
      path: z.string().min(1).max(1024).describe(`The file's path, absolute or relative to ${SANDBOX_HOME}.`),
    }),
    execute: async ({ path: wanted }): Promise<Shared> => {
      if (++shared > SHARES_PER_REPLY)
        throw new Error(`A reply can share at most ${SHARES_PER_REPLY} files.`);
      // The folder as stored: the last command may have run on another instance.
      if (ctx.store) await withFolder(root, () => ctx.store!.pull());
      const file = await inside(root, wanted);
      // One open file from the type check to the last byte: what is judged is what is stored.
      const handle = await open(file, 'r');
      try {
        const size = (await handle.stat()).size;
        const head = Buffer.alloc(Math.min(size, SNIFF_BYTES));
        await handle.read(head, 0, head.length, 0);
        // A file not kept fails the call with NotKept's words, which the Model and the Player both read.
        const shared = await keepFile(
          sql,
          ctx,
          {
            name: path.basename(file),
            size,
            head,
            bytes: handle.createReadStream({ start: 0, autoClose: false }),
          },
          limits,
        );
        return { shared };
      } finally {
        await handle.close();
      }
    },
  });
}

/** The host path of a sandbox path, only when it (links resolved) lies inside the sandbox's folder. */
async function inside(root: string, wanted: string): Promise<string> {
  const relative = wanted.startsWith(`${SANDBOX_HOME}/`) ? wanted.slice(SANDBOX_HOME.length + 1) : wanted;
  const refuse = () => new Error(`${wanted} is not a file in your sandbox.`);
  if (path.isAbsolute(relative)) throw refuse();
  let real: string;
  try {
    real = await realpath(path.resolve(root, relative));
  } catch {
    throw refuse();
  }
  const realRoot = await realpath(root).catch(() => root);
  if (!real.startsWith(`${realRoot}${path.sep}`)) throw refuse();
  return real;
}

/** The file a completed `share_file` call handed over, if the Part is one. */
export function sharedFile(output: unknown): FilePart | undefined {
  const shared = (output as Partial<Shared> | null)?.shared;
  return shared && shared.type === 'file' ? shared : undefined;
}
