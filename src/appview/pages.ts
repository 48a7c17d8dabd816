import type { Sql } from '../db/index.ts';
import { SESSION } from '../lexicon/index.ts';
import type { Network } from './network.ts';
import { isTombstoned, listSessions, resolveActor } from './read.ts';
import { type CoverOf, readThread, shownText, type ThreadView } from './thread.ts';

/** What a thread's head (its description, its card) reads: who, the session, and its first turns' records. */
type ThreadHead = Pick<ThreadView, 'author' | 'session'> & {
  messages: readonly { record: Record<string, unknown> }[];
};

/** How a reading page describes itself (src/web/readerPage.ts's PageMeta, by shape). */
interface PageMeta {
  title: string;
  description: string;
  canonical: string;
  atUri?: string;
  feed: string;
  image?: string;
}

/** The first words a thread's published text shows (a withheld turn has none), for a link card. */
export function firstWords(thread: ThreadHead, max = 160): string | null {
  for (const m of thread.messages) {
    const text = shownText(m.record);
    if (text !== null) return text.trim().replace(/\s+/g, ' ').slice(0, max);
  }
  return null;
}

/**
 * What a thread's link card shows: its title, its author and its first published texts — the records as the
 * reader gets them (withheld turns carry no text; covered words are already bars).
 */
export function cardOf(thread: ThreadHead): { title: string; author: string; lines: string[] } {
  const lines: string[] = [];
  for (const m of thread.messages) {
    const text = shownText(m.record);
    if (text !== null) lines.push(text.slice(0, 400));
    if (lines.length === 3) break;
  }
  return {
    title: (thread.session as { title?: string }).title ?? 'A conversation',
    author: thread.author.handle ? `@${thread.author.handle}` : thread.author.did,
    lines,
  };
}

/** The head of a thread's page: the one address (by DID), the record, the author's feed and the card's picture. */
export function threadMeta(base: string, thread: ThreadHead, rkey: string): PageMeta {
  const did = thread.author.did;
  const title = (thread.session as { title?: string }).title ?? 'A conversation';
  const who = thread.author.handle ? `@${thread.author.handle}` : did;
  const first = firstWords(thread);
  return {
    title,
    description: `${who} published a conversation with AI characters${first ? `: “${first}”` : '.'}`,
    canonical: `${base}/profile/${did}/thread/${rkey}`,
    atUri: `at://${did}/${SESSION}/${rkey}`,
    feed: `${base}/profile/${did}/feed.atom`,
    image: `${base}/profile/${did}/thread/${rkey}/card.png`,
  };
}

/**
 * What the server-rendered reading pages read (src/web/readerPages.ts's ReaderSource): a page of a thread as the
 * reader's API answers it, with the head the whole thread gives it — or "gone" when the index holds its delete.
 */
export function readerSource(deps: { sql: Sql; reader: Network; baseUrl: string; coverOf?: CoverOf }) {
  const { sql, reader } = deps;
  return {
    async thread(actor: string, rkey: string, page = 1, requester?: string) {
      const did = await resolveActor(sql, reader, actor);
      if (!did) return null;
      // A thread the index holds is served whatever delete came before it (published again under the same key,
      // the earlier delete may reach the index after the new record's write-through); one it does not hold is not
      // looked for in its author's repo when the index holds its delete, and is "gone".
      const read = await readThread(sql, reader, did, rkey, page, {
        deletedStaysGone: true,
        coverOf: deps.coverOf,
        requester,
      });
      if (read === 'no-page') return read;
      if (read) {
        const { thread, window, opening } = read;
        const head = { ...thread, messages: opening.map((record) => ({ record })) };
        return { meta: threadMeta(deps.baseUrl, head, rkey), thread, window, card: cardOf(head) };
      }
      return (await isTombstoned(sql, `at://${did}/${SESSION}/${rkey}`)) ? ('gone' as const) : null;
    },
    async list(actor: string | null, requester?: string) {
      const base = deps.baseUrl;
      const did = actor ? await resolveActor(sql, reader, actor) : null;
      if (actor && !did) return null;
      const { sessions } = await listSessions(sql, reader, { did: did ?? undefined, limit: 50, requester });
      const title = actor ? `Conversations published by ${actor}` : 'Recently published conversations';
      return {
        sessions,
        meta: {
          title,
          description: `${title} on AgentsVille: people's conversations with AI characters.`,
          canonical: actor ? `${base}/profile/${did}` : `${base}/threads`,
          feed: actor ? `${base}/profile/${did}/feed.atom` : `${base}/feeds/recent.atom`,
        },
      };
    },
  };
}
