import type { Sql } from '../db/index.ts';
import { type Cover, makeCover } from '../redaction/index.ts';

/**
 * What the reader shows beside a thread published from here is looked up when it is read (a linked post's text
 * now, a mentioned account's handle now) and was never in a record: the Conversation's cover is applied to it
 * too, so a word the Player covered does not come back through someone else's post. Given to the reader (app.ts
 * wires it), as a session's at-uri to the cover of the Conversation published under it; null for a thread
 * published from elsewhere (its author's covered words never left that server) or with nothing covered.
 */
export function readerCover(sql: Sql): (uri: string) => Promise<Cover | null> {
  return async (uri) => {
    const [, , did, , rkey] = uri.split('/');
    if (!did || !rkey) return null;
    const [row] = await sql<{ words: Record<string, string[]> }[]>`
      select d.words from publications p join publication_drafts d using (conversation_id)
      where p.did = ${did} and p.session_rkey = ${rkey}`;
    const words = new Set(Object.values(row?.words ?? {}).flat());
    // Made for this read alone: a cover remembers every string it found clean, which a cover kept across reads
    // of a popular thread would do without end.
    return words.size ? makeCover(words) : null;
  };
}
