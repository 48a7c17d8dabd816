import { isValidRecord, MESSAGE, type MessageRecord, SESSION, type SessionRecord } from '../lexicon/index.ts';
import type { Network } from './network.ts';

export interface ThreadView {
  uri: string;
  author: { did: string; handle: string | null };
  session: SessionRecord;
  messages: {
    uri: string;
    rkey: string;
    record: MessageRecord;
    refs: { uri: string; cid: string; state: 'same' | 'changed' | 'deleted'; text: string | null }[];
    mentions: { did: string; handle: string | null }[];
  }[];
  /** Records of this session that failed the lexicon and were left out. */
  skipped: number;
}

/**
 * A published thread read straight from its author's PDS: the session, then its turns in TID (reading)
 * order. Every record is validated against the lexicon; invalid ones are skipped and counted. Refs are
 * looked up now, to say whether what was discussed has changed since or is gone.
 */
export async function readThread(network: Network, actor: string, rkey: string): Promise<ThreadView | null> {
  const did = await network.didOf(actor);
  const author = did ? await network.identity(did) : null;
  if (!author) return null;
  const uri = `at://${author.did}/${SESSION}/${rkey}`;
  const session = await network.record(uri);
  if (!session || !isValidRecord(SESSION, session.value)) return null;
  let skipped = 0;
  const turns: { uri: string; rkey: string; record: MessageRecord }[] = [];
  for await (const r of network.listRecords(author.pds, author.did, MESSAGE)) {
    const value = r.value as { session?: unknown };
    if (value.session !== uri) continue;
    if (!isValidRecord(MESSAGE, r.value)) {
      skipped++;
      continue;
    }
    turns.push({ uri: r.uri, rkey: r.uri.split('/').pop()!, record: r.value as MessageRecord });
  }
  turns.sort((a, b) => (a.rkey < b.rkey ? -1 : 1));
  const handles = new Map<string, string | null>();
  const handleOf = async (d: string) => {
    if (!handles.has(d)) handles.set(d, (await network.identity(d))?.handle ?? null);
    return handles.get(d) ?? null;
  };
  const messages = await Promise.all(
    turns.map(async (t) => ({
      ...t,
      refs: await Promise.all(
        (t.record.refs ?? []).map(async (ref) => {
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
        (t.record.mentions ?? []).map(async (m) => ({ did: m, handle: await handleOf(m) })),
      ),
    })),
  );
  return {
    uri,
    author: { did: author.did, handle: author.handle },
    session: session.value as SessionRecord,
    messages,
    skipped,
  };
}
