import { XRPCError } from '@atproto/api';
import { CID } from 'multiformats/cid';
import { avatarBlobBySha256, blobFacts, readBlobBytes } from '../attachments/index.ts';
import type { Sql } from '../db/index.ts';
import {
  AVATAR_MAX_BYTES,
  avatarBlob,
  avatarFromFacts,
  type PublishedAvatar,
  readAvatar,
  SESSION,
} from '../lexicon/index.ts';
import { avatarBlobIds } from '../village/index.ts';
import type { Repo, RepoWrite } from './repo.ts';

/**
 * NPC avatars in a published session (ADR 0065): the reference each NPC's picture would have, known before any
 * upload (so the record is planned, diffed and previewed as any other); the bytes go to the Player's PDS just
 * before the write that references them.
 */

/** By NPC id: the published reference of each NPC's avatar that can be published (an accepted image, small enough). */
export async function npcAvatars(sql: Sql, npcIds: readonly string[]): Promise<Map<string, PublishedAvatar>> {
  const out = new Map<string, PublishedAvatar>();
  for (const [npcId, blobId] of await avatarBlobIds(sql, npcIds)) {
    // From the stored hash, size and first bytes (a preview asks every few hundred ms while the Player edits);
    // the bytes themselves only for a blob stored without its hash. One byte past the limit shows it too large.
    const facts = await blobFacts(sql, blobId);
    const a =
      facts?.sha256 && facts.size > 0
        ? avatarFromFacts({ sha256: facts.sha256, size: facts.size, head: facts.head })
        : await avatarBlob(await readBlobBytes(sql, blobId, AVATAR_MAX_BYTES + 1));
    if (a) out.set(npcId, a);
  }
  return out;
}

/** The avatars a write of the session record references. Pure. */
export function avatarsOf(write: RepoWrite): PublishedAvatar[] {
  if (write.action === 'delete' || write.collection !== SESSION) return [];
  const agents = (write.value as { agents?: { avatar?: unknown }[] }).agents ?? [];
  return agents.flatMap((a) => readAvatar(a.avatar) ?? []);
}

/**
 * Uploads the blobs a batch's session record references (a PDS refuses a record whose blob it does not hold).
 * Idempotent: the same bytes give the same CID, so a retried or resumed publish uploads them again harmlessly.
 */
export async function uploadAvatars(sql: Sql, repo: Repo, batch: readonly RepoWrite[]): Promise<number> {
  const wanted = new Map(batch.flatMap(avatarsOf).map((a) => [a.cid, a]));
  for (const a of wanted.values()) {
    const blobId = await avatarBlobBySha256(sql, CID.parse(a.cid).multihash.digest);
    const bytes = blobId ? await readBlobBytes(sql, blobId, AVATAR_MAX_BYTES + 1) : undefined;
    const actual = bytes && (await avatarBlob(bytes));
    // The NPC's picture changed since the plan (or went): publishing again plans the new one.
    if (!actual || actual.cid !== a.cid)
      throw new Error('an NPC’s avatar changed while publishing; publish again to use the new one');
    await repo.uploadBlob(bytes, a.mimeType).catch((e: unknown) => {
      // A sign-in from before pictures could be published lacks the `blob:image/*` permission: said plainly, and
      // still a refusal (nothing was written, nothing is retried).
      if (e instanceof XRPCError && e.status >= 400 && e.status < 500 && /scope/i.test(e.message))
        throw new XRPCError(
          e.status,
          e.error,
          'Your sign-in does not allow publishing pictures yet: sign out and sign in again, or untick the NPC’s picture.',
        );
      throw e;
    });
  }
  return wanted.size;
}
