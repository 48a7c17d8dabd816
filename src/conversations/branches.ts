import type { Queryable } from '../db/index.ts';

/**
 * The Conversation tree (ADR 0042). Messages form a tree by `parent_id`; `on_path` marks the one path the
 * transcript shows, from the root to the head. New Messages are appended at the head; branching moves the head.
 */

/** The head of the current path: where the next Message is appended (none in an empty Conversation). */
export const pathLeaf = (q: Queryable, conversationId: string) => q`
  (select id from messages where conversation_id = ${conversationId} and on_path order by seq desc limit 1)`;

/**
 * Makes the path the one from the root to `head` (null: an empty path, to start again at the root), in one
 * statement: marks what left and joined it, and forgets the rolling summary when it covered a Message that
 * is no longer on the path — the summary follows the path, so it is rebuilt from the new one.
 */
export async function setPath(q: Queryable, conversationId: string, head: string | null): Promise<void> {
  await q`
    with recursive up as (
      select id, parent_id from messages where id = ${head} and conversation_id = ${conversationId}
      union all
      select m.id, m.parent_id from messages m join up on m.id = up.parent_id),
    went as (
      update messages set on_path = false
      where conversation_id = ${conversationId} and on_path and id not in (select id from up)
      returning seq),
    came as (update messages set on_path = true, shown_at = clock_timestamp()
      where id in (select id from up) and not on_path returning seq),
    forgot as (
      update conversations set summary = '', summary_through = 0
      where id = ${conversationId} and summary_through >= (select min(seq) from went))
    select (select count(*) from went) + (select count(*) from came) as moved`;
}

/**
 * The head a Player reaches by choosing `messageId`: it, then at each step the child last shown on the path
 * (the newest, for one never shown), down to a leaf — so switching to a branch shows where it was left.
 */
export async function branchHead(
  q: Queryable,
  conversationId: string,
  messageId: string,
): Promise<string | null> {
  const [row] = await q<{ id: string }[]>`
    with recursive down as (
      select id, 0 as depth from messages where id = ${messageId} and conversation_id = ${conversationId}
      union all
      select c.id, down.depth + 1 from down
      cross join lateral (select id from messages where parent_id = down.id and conversation_id = ${conversationId}
        order by shown_at desc, seq desc limit 1) c
      where down.depth < 100000)
    select id from down order by depth desc limit 1`;
  return row?.id ?? null;
}
