import type { Fragment, Queryable } from '../db/index.ts';

// What a delete does to the index: the record goes, and its tombstone stays a while (store.ts re-exports these).

/**
 * A deleted record goes at once, and its delete is kept (with the deleting commit's rev, when known) so that a
 * stale copy — a backfill's, or an older event replayed — cannot bring it back. A delete older than the row's
 * own version (a late event, after the thread was published again) leaves the row. Run under the author's lock
 * (see `underAuthorLock`) where a backfill could be writing beside it.
 */
export function removeRecord(sql: Queryable, uri: string, rev?: string): Promise<void> {
  return removeRecords(sql, [{ uri, rev }]);
}

/**
 * `removeRecord` of many, in three statements whatever their number: an unpublish removes a whole thread, and a
 * commit of 200 deletes is one batch of the stream's. A record deleted twice here counts as deleted by its newest
 * rev for its tombstone, and by one of unknown rev (which removes whatever version) if either delete's is unknown,
 * as the deletes one after another would leave it.
 */
export async function removeRecords(
  sql: Queryable,
  removals: readonly { uri: string; rev?: string | null }[],
): Promise<void> {
  if (!removals.length) return;
  const uris = removals.map((r) => r.uri);
  const revs = removals.map((r) => r.rev ?? null);
  const each = sql`(select u, max(r) as rev, bool_or(r is null) as unknown
    from unnest(${uris}::text[], ${revs}::text[]) as x(u, r) group by u)`;
  await sql`insert into index_tombstones (uri, rev)
    select u, rev from ${each} as d order by u
    on conflict (uri) do update set deleted_at = now(),
      rev = case when index_tombstones.rev is null or excluded.rev > index_tombstones.rev
        then excluded.rev else index_tombstones.rev end`;
  const older = (table: Fragment) => sql`(d.unknown or ${table}.rev is null or ${table}.rev <= d.rev)`;
  await sql`delete from index_sessions s using ${each} as d where s.uri = d.u and ${older(sql`s`)}`;
  await sql`delete from index_messages m using ${each} as d where m.uri = d.u and ${older(sql`m`)}`;
}

/** How long a delete is remembered: longer than any backfill or replay can lag behind it. */
export const TOMBSTONE_DAYS = 7;

export async function pruneTombstones(sql: Queryable): Promise<number> {
  const gone = await sql`delete from index_tombstones
    where deleted_at < now() - make_interval(days => ${TOMBSTONE_DAYS})`;
  return gone.count;
}
