import type { Sql } from '../db/index.ts';
import { SESSION } from '../lexicon/index.ts';
import type { Network } from './network.ts';
import { getThread, resolveActor } from './read.ts';

export interface ThreadView {
  uri: string;
  author: { did: string; handle: string | null };
  session: Record<string, unknown>;
  messages: {
    uri: string;
    rkey: string;
    record: Record<string, unknown>;
    refs: { uri: string; cid: string; state: 'same' | 'changed' | 'deleted'; text: string | null }[];
    mentions: { did: string; handle: string | null }[];
  }[];
}

/**
 * A published thread for the reader: from the index (backfilled from the author's repo when the index has not
 * seen it), with each ref looked up now — "changed since" when its CID moved, "deleted" when it is gone — and
 * each mention shown as its current handle.
 */
export async function readThread(
  sql: Sql,
  network: Network,
  actor: string,
  rkey: string,
): Promise<ThreadView | null> {
  const did = await resolveActor(sql, network, actor);
  if (!did) return null;
  const thread = await getThread(sql, network, `at://${did}/${SESSION}/${rkey}`);
  if (!thread) return null;
  const handles = new Map<string, string | null>();
  const handleOf = async (d: string) => {
    if (!handles.has(d)) handles.set(d, (await network.identity(d))?.handle ?? null);
    return handles.get(d) ?? null;
  };
  const messages = await Promise.all(
    thread.messages.map(async (m) => {
      const record = m.record as { refs?: { uri: string; cid: string }[]; mentions?: string[] };
      return {
        uri: m.uri,
        rkey: m.uri.split('/').pop()!,
        record: m.record,
        refs: await Promise.all(
          (record.refs ?? []).map(async (ref) => {
            const now = await network.record(ref.uri);
            const text = (now?.value as { text?: unknown } | undefined)?.text;
            return {
              uri: ref.uri,
              cid: ref.cid,
              state: !now
                ? ('deleted' as const)
                : now.cid === ref.cid
                  ? ('same' as const)
                  : ('changed' as const),
              text: typeof text === 'string' ? text : null,
            };
          }),
        ),
        mentions: await Promise.all(
          (record.mentions ?? []).map(async (d) => ({ did: d, handle: await handleOf(d) })),
        ),
      };
    }),
  );
  return {
    uri: thread.session.uri,
    author: { did, handle: thread.session.author.handle ?? (await handleOf(did)) },
    session: thread.session.record,
    messages,
  };
}
