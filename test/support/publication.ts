import { AtpAgent } from '@atproto/api';
import { expect } from 'vitest';
import type { Sql } from '../../src/db/index.ts';

/** Every record of a session in a repo (the session and the messages pointing at it), by rkey. */
export async function sessionRecords(pdsUrl: string, did: string, sessionUri: string) {
  const agent = new AtpAgent({ service: pdsUrl });
  const found = new Map<string, { collection: string; cid: string; value: unknown }>();
  for (const collection of ['click.aligned.chat.session', 'click.aligned.chat.message']) {
    let cursor: string | undefined;
    do {
      const page = await agent.com.atproto.repo.listRecords({ repo: did, collection, limit: 100, cursor });
      for (const r of page.data.records) {
        const mine = r.uri === sessionUri || (r.value as { session?: string }).session === sessionUri;
        const rkey = r.uri.split('/').pop()!;
        // A duplicate rkey cannot exist in one collection; keyed by collection too, so none is hidden.
        if (mine) found.set(`${collection}/${rkey}`, { collection, cid: r.cid, value: r.value });
      }
      cursor = page.data.records.length === 100 ? page.data.cursor : undefined;
    } while (cursor);
  }
  return found;
}

/**
 * The repo holds exactly the stored plan: every planned record, with the planned value and the CID the plan
 * recorded, nothing pending, and no other record of the session (no duplicate, no leftover).
 */
export async function expectRepoToMatchPlan(
  local: { app: { db: { sql: Sql }; running: { localnet?: { pdsUrl: string } } } },
  did: string,
  conversationId: string,
  sessionUri: string,
) {
  const plan = await local.app.db.sql<
    { rkey: string; collection: string; record: unknown; cid: string | null; pending: string | null }[]
  >`select rkey, collection, record, cid, pending from publication_records
    where conversation_id = ${conversationId} order by position`;
  expect(plan.length).toBeGreaterThan(0);
  expect(plan.filter((p) => p.pending !== null)).toEqual([]);
  const inRepo = await sessionRecords(local.app.running.localnet!.pdsUrl, did, sessionUri);
  expect([...inRepo.keys()].sort()).toEqual(plan.map((p) => `${p.collection}/${p.rkey}`).sort());
  for (const p of plan) {
    const got = inRepo.get(`${p.collection}/${p.rkey}`)!;
    expect(got.value).toEqual(p.record);
    expect(got.cid).toBe(p.cid);
  }
}

/** The session's message records on the PDS in reading order (their rkeys are TIDs, in reading order). */
export async function publishedMessages(pdsUrl: string, did: string, sessionUri: string) {
  return [...(await sessionRecords(pdsUrl, did, sessionUri)).entries()]
    .filter(([, r]) => r.collection === 'click.aligned.chat.message')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([, r]) => r.value as { text?: string; withheld?: boolean });
}
