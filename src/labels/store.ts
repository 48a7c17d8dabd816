import type { Queryable, Sql } from '../db/index.ts';
import { HIDING, type Label } from './label.ts';

type Fragment = ReturnType<Queryable>;

/** Where this labeler's stream was read to (undefined: from its beginning). */
export async function readLabelerCursor(sql: Queryable, did: string): Promise<number | undefined> {
  const [row] = await sql<{ cursor: string }[]>`select cursor::text from labeler_cursors where did = ${did}`;
  return row ? Number(row.cursor) : undefined;
}

/**
 * One frame's verified labels and its seq, in one transaction: a restart resumes after the last frame stored,
 * and a replay is harmless (a label replaces its row only when it is as new or newer: a negation is not undone by
 * the older label it negates arriving again).
 */
export async function storeLabels(sql: Sql, src: string, seq: number, labels: Label[]): Promise<void> {
  await sql.begin(async (tx) => {
    for (const l of labels) {
      await tx`insert into labels (src, uri, val, cid, neg, cts, exp)
        values (${src}, ${l.uri}, ${l.val}, ${l.cid ?? null}, ${l.neg === true}, ${new Date(l.cts)},
          ${l.exp ? new Date(l.exp) : null})
        on conflict (src, uri, val) do update set cid = excluded.cid, neg = excluded.neg, cts = excluded.cts,
          exp = excluded.exp, received_at = now()
        where labels.cts <= excluded.cts`;
    }
    await tx`insert into labeler_cursors (did, cursor) values (${src}, ${seq})
      on conflict (did) do update set cursor = excluded.cursor, updated_at = now()`;
  });
}

/**
 * Labels of labelers no longer configured stop counting: their rows go (the cursor too, so following one again
 * reads its labels again from the start).
 */
export async function forgetOtherLabelers(sql: Sql, keep: string[]): Promise<void> {
  await sql`delete from labels where not (src = any(${keep}))`;
  await sql`delete from labeler_cursors where not (did = any(${keep}))`;
}

/** The labels in effect on these subjects (DIDs, at:// URIs) that do not hide them: what a reader is told. */
export async function noticeLabels(
  sql: Queryable,
  subjects: string[],
): Promise<{ src: string; uri: string; val: string }[]> {
  return sql<{ src: string; uri: string; val: string }[]>`select src, uri, val from labels
    where uri = any(${subjects}) and not neg and (exp is null or exp > now())
      and not (val = any(${[...HIDING]})) and val <> '!no-unauthenticated'
    order by val, src limit 50`;
}

/**
 * The labels in effect on these turns (at:// URIs of one thread's messages), hiding ones included: the reader
 * says which holes a labeler made and puts a notice in front of a labelled turn. Bounded like a thread's turns.
 */
export async function turnLabels(
  sql: Queryable,
  uris: string[],
): Promise<{ src: string; uri: string; val: string }[]> {
  if (!uris.length) return [];
  return sql<{ src: string; uri: string; val: string }[]>`select src, uri, val from labels
    where uri = any(${uris}) and not neg and (exp is null or exp > now()) and val <> '!no-unauthenticated'
    order by uri, val, src limit 10000`;
}

// appview/ reads the labels that hide within its own statements (a thread labelled hidden is read as absent in
// the query that reads it): these fragments name this room's table for it. A negated or expired label no longer
// counts.

/** A label in effect on `l`, the labels row of the fragments below. */
const inEffect = (sql: Queryable) => sql`not l.neg and (l.exp is null or l.exp > now())`;

/** True in the caller's statement when a followed labeler hides one of `subjects` (a list of its columns). */
export const hiddenByLabel = (sql: Queryable, subjects: Fragment) =>
  sql`exists (select 1 from labels l where l.uri in (${subjects}) and l.val in ('!takedown', '!hide')
    and ${inEffect(sql)})`;

/**
 * The hiding labels on the URIs from `from` (inclusive) to `to` (exclusive) that `join` (the caller's join to its
 * own rows, over `l`) keeps, as a lateral row: `stamp` (the newest one's receipt and the count in effect, which a
 * label, its negation and its expiry each change) and `held` (the count in effect). Read by the labels_by_uri range.
 */
export const hidingLabelsBetween = (
  sql: Queryable,
  from: Fragment,
  to: Fragment,
  join: Fragment,
) => sql`lateral (
  select max(l.received_at)::text || '/' || count(*) filter (where ${inEffect(sql)}) as stamp,
    count(*) filter (where ${inEffect(sql)}) as held
  from labels l ${join}
  where l.uri ~>=~ ${from} and l.uri ~<~ ${to} and l.val in ('!takedown', '!hide'))`;
