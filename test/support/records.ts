import type { AtpAgent } from '@atproto/api';
import { TID } from '@atproto/common-web';
import type { Network } from '../../src/appview/network.ts';
import { indexRecords } from '../../src/appview/store.ts';
import type { Sql } from '../../src/db/index.ts';

const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';

/** A network that knows nobody: reads of threads indexThread put in (verified handles) need none. */
export const noNetwork = { identity: async () => null, didOf: async () => null } as unknown as Network;

/**
 * A thread put straight into the index, as if read from the network: its author known by a verified handle (no
 * network lookup), a session titled `title` with one agent, Ada, and these turns (each a message record's fields).
 */
export async function indexThread(
  sql: Sql,
  author: { did: string; handle: string },
  title: string,
  turns: Record<string, unknown>[],
  createdAt = '2026-11-01T00:00:00.000Z',
): Promise<{ rkey: string; uri: string }> {
  await sql`insert into index_actors (did, handle, verified_at) values (${author.did}, ${author.handle}, now())
    on conflict (did) do update set handle = excluded.handle, verified_at = now()`;
  const rkey = TID.nextStr();
  const uri = `at://${author.did}/click.aligned.chat.session/${rkey}`;
  await indexRecords(sql, author.did, [
    {
      collection: 'click.aligned.chat.session',
      rkey,
      cid: CID,
      record: { $type: 'click.aligned.chat.session', title, createdAt, agents: [{ name: 'Ada' }] },
    },
    ...turns.map((t) => ({
      collection: 'click.aligned.chat.message',
      rkey: TID.nextStr(),
      cid: CID,
      record: { $type: 'click.aligned.chat.message', session: uri, createdAt, ...t },
    })),
  ]);
  return { rkey, uri };
}

/** A click.aligned.chat.session written straight to a repo, as another app would; returns its at-uri. */
export async function writeSession(agent: AtpAgent, did: string, title: string): Promise<string> {
  const rkey = TID.nextStr();
  await agent.com.atproto.repo.createRecord({
    repo: did,
    collection: 'click.aligned.chat.session',
    rkey,
    record: { $type: 'click.aligned.chat.session', title, createdAt: new Date().toISOString() },
  });
  return `at://${did}/click.aligned.chat.session/${rkey}`;
}

/** `n` user turns of that session, one write each, texts `${prefix}0` … in order. */
export async function writeTurns(agent: AtpAgent, did: string, session: string, n: number, prefix: string) {
  for (let i = 0; i < n; i++) {
    await agent.com.atproto.repo.createRecord({
      repo: did,
      collection: 'click.aligned.chat.message',
      rkey: TID.nextStr(),
      record: {
        $type: 'click.aligned.chat.message',
        session,
        role: 'user',
        createdAt: new Date().toISOString(),
        text: `${prefix}${i}`,
      },
    });
  }
}

/** A user turn's record of that session, as the index receives it. */
export const userTurn = (session: string, text: string) => ({
  $type: 'click.aligned.chat.message',
  session,
  role: 'user',
  text,
  createdAt: '2026-11-01T00:00:00.000Z',
});
