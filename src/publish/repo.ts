import type { Agent } from '@atproto/api';
import { isValidTid } from '@atproto/syntax';

export type RepoWrite =
  | { action: 'create' | 'update'; collection: string; rkey: string; value: Record<string, unknown> }
  | { action: 'delete'; collection: string; rkey: string };

/** What one applyWrites call wrote: each write's CID, and the commit's rev. */
export interface Written {
  cids: (string | null)[];
  rev: string | null;
}

/** The slice of a Player's repo the publisher uses. Backed by their OAuth session (see agentRepo). */
export interface Repo {
  did: string;
  /**
   * Atomic: all of `writes` land, or none. Returns the CID of each create/update, in order (null for deletes), and
   * the rev of the commit that wrote them (when the PDS says).
   */
  applyWrites(writes: RepoWrite[]): Promise<Written>;
  getRecordCid(collection: string, rkey: string): Promise<string | null>;
  /** Stores a blob a record about to be written references (an NPC's avatar: ADR 0065). */
  uploadBlob(bytes: Uint8Array, mimeType: string): Promise<void>;
  listRecords(collection: string): AsyncIterable<{ uri: string; cid: string; value: unknown }>;
}

/** Pages of 100 that a listing reads at most. */
const LIST_PAGES = 1_000;

const TYPE = {
  create: 'com.atproto.repo.applyWrites#create',
  update: 'com.atproto.repo.applyWrites#update',
  delete: 'com.atproto.repo.applyWrites#delete',
} as const;

export function agentRepo(agent: Agent, did: string): Repo {
  return {
    did,
    async applyWrites(writes) {
      const res = await agent.com.atproto.repo.applyWrites({
        repo: did,
        // No `validate`: the PDS does not know our lexicon (we validated every record before this call).
        writes: writes.map(({ action, ...write }) => ({ $type: TYPE[action], ...write }) as never),
      });
      const results = (res.data.results ?? []) as { cid?: string }[];
      // The PDS may be anyone's: a rev that is not a TID is no rev (it orders the index's copies of these records).
      const rev = res.data.commit?.rev;
      return { cids: writes.map((_, i) => results[i]?.cid ?? null), rev: isValidTid(rev) ? rev : null };
    },
    async uploadBlob(bytes, mimeType) {
      await agent.com.atproto.repo.uploadBlob(bytes, { encoding: mimeType });
    },
    async getRecordCid(collection, rkey) {
      try {
        const res = await agent.com.atproto.repo.getRecord({ repo: did, collection, rkey });
        return res.data.cid ?? null;
      } catch (e) {
        if ((e as { error?: string }).error === 'RecordNotFound' || (e as { status?: number }).status === 400)
          return null;
        throw e;
      }
    },
    async *listRecords(collection) {
      // A PDS that never ends its listing (a cursor seen before, pages without end) is read so far only:
      // LIST_PAGES pages, 100,000 records (what it lists is a check after the writes, not the writes).
      let cursor: string | undefined;
      const seen = new Set<string>();
      for (let page = 0; page < LIST_PAGES; page++) {
        const res = await agent.com.atproto.repo.listRecords({ repo: did, collection, limit: 100, cursor });
        yield* res.data.records;
        const next = res.data.records.length === 100 ? res.data.cursor : undefined;
        if (!next || seen.has(next)) return;
        seen.add(next);
        cursor = next;
      }
    },
  };
}
