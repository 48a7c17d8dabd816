// The SQL fragments the index's reads compose: what is served, what a hidden turn becomes, and the read's bounds.
import type { Queryable, Sql } from '../db/index.ts';
import { hiddenByLabel, hidingLabelsBetween } from '../labels/index.ts';
import { MESSAGE } from '../lexicon/index.ts';
import { takenDown } from '../moderation/index.ts';

/**
 * Not served: an author whose account is not active, a thread or author an admin took down on this instance
 * (moderation/'s `takedowns`), or one a followed labeler labelled `!takedown` or `!hide` (labels/'s `labels`: a
 * negated or expired label no longer counts), in the statement that reads it: those rooms' fragments name their
 * tables. Over `s` (index_sessions) and `a` (index_actors).
 */
export const hidden = (sql: Sql) => sql`(a.status is not null or ${takenDown(sql, sql`s.did, s.uri`)}
  or ${hiddenByLabel(sql, sql`s.did, s.uri`)})`;

/**
 * A turn (`m`, index_messages) a followed labeler labelled `!takedown` or `!hide`: served as a hole, the shape a
 * withheld turn has (holeView), while the rest of its thread is served. A negated or expired label no longer counts.
 */
export const turnHidden = (sql: Queryable) => hiddenByLabel(sql, sql`m.uri`);

/** A turn served as a hole: only what a withheld turn's record says (who spoke, and when), none of its content. */
export const holeView = (
  sql: Queryable,
) => sql`json_build_object('uri', m.uri, 'cid', m.cid, 'record', json_strip_nulls(
  json_build_object('$type', m.record->'$type', 'session', m.record->'session', 'role', m.record->'role',
    'createdAt', m.record->'createdAt', 'withheld', true)))::text`;

/**
 * The hiding labels on the thread's turns (`s`: index_sessions), as a stamp and a count in effect. The stamp joins
 * the thread's cache version: a label, its negation (a newer row: received_at moves) and its expiry (the count
 * drops) each change it. Found as the range of the author's turn URIs (labels_by_uri), usually empty; a label on
 * a turn not indexed yet needs no stamp: indexing the turn moves the thread's version.
 */
export const turnLabels = (sql: Sql) =>
  hidingLabelsBetween(
    sql,
    sql`('at://' || s.did || ${`/${MESSAGE}/`})`,
    sql`('at://' || s.did || ${`/${MESSAGE}0`})`,
    sql`join index_messages m on m.uri = l.uri and m.session_uri = s.uri and m.did = s.did`,
  );

/** How long a verified handle is shown before it is verified again. */
export const REVERIFY_MS = 24 * 60 * 60 * 1000;

/**
 * One read of a thread is bounded whatever its author wrote: the first 5,000 turns, and no more than 16 MB of
 * them (a turn is at most 1 MB of JSON: see store.ts). Ours never come near; a repo built to be read to death stops
 * here. Bytes by `octet_length`, which PostgreSQL reads from a stored value's header without decompressing it.
 */
export const MAX_THREAD_TURNS = 5000;
export const MAX_THREAD_BYTES = 16 * 1024 * 1024;
/**
 * A thread whose turns hold more than this is large (the index's totals say so before it is read): its read and its
 * parse each take a place in a small pool (threadBody.ts, threadParse.ts; ADR 0089).
 */
export const LARGE_THREAD_BYTES = 1024 * 1024;

/** Only a handle verified within the day is ever served: otherwise it is looked up again first (ensureHandles). */
export const verifiedHandle = (sql: Sql) =>
  sql`case when a.verified_at > now() - make_interval(secs => ${REVERIFY_MS / 1000}) then a.handle end`;

export const sessionColumns = (sql: Sql) => sql`
  s.uri, s.cid, s.did, ${verifiedHandle(sql)} as handle, a.verified_at,
  case when ${hidden(sql)} then coalesce(a.status, 'takendown') end as status, s.record, s.indexed_at,
  coalesce((select t.turns from index_thread_totals t where t.session_uri = s.uri and t.did = s.did), 0) as turns`;
