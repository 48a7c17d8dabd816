import { isValidHandle } from '@atproto/syntax';
import type { JsonValue, Queryable, Sql } from '../db/index.ts';
import { isValidRecord, MESSAGE, SESSION } from '../lexicon/index.ts';
import { wellFormed } from '../parts/index.ts';

export const COLLECTIONS = [SESSION, MESSAGE] as const;

/**
 * Larger than any record we write, as JSON text (a turn's text is at most 60,000 bytes, which escaping can at
 * most double, and 100 one-line steps): anything past it is not a turn.
 */
export const MAX_RECORD_CHARS = 256 * 1024;

/**
 * Whether a record from the network may be indexed: one of ours, valid to its lexicon, storable as jsonb, of a
 * sane size, and — for a turn — in a session of its own author. Any repo can hold any record: a turn naming
 * somebody else's session must not appear in their thread.
 */
export function indexable(
  did: string,
  collection: string,
  record: unknown,
  /** The record's JSON length when the caller has it already. */
  jsonChars?: number,
): boolean {
  if (collection !== SESSION && collection !== MESSAGE) return false;
  if (!isValidRecord(collection, record)) return false;
  // NUL or half a surrogate pair: valid to the lexicon, refused by jsonb. Such a record cannot be kept as
  // written, so it is skipped like an invalid one — never retried for ever, holding up the stream.
  if (wellFormed(record) !== record) return false;
  if ((jsonChars ?? JSON.stringify(record).length) > MAX_RECORD_CHARS) return false;
  return collection === SESSION || sessionOf(record).startsWith(`at://${did}/${SESSION}/`);
}

const sessionOf = (record: unknown) => (record as { session: string }).session;

/**
 * Indexes one record from the network. Invalid records are skipped and counted (and any older valid version
 * is dropped); valid ones are upserted by at-uri, so replaying an event never doubles a row.
 */
export async function indexRecord(
  sql: Queryable,
  r: { did: string; collection: string; rkey: string; cid: string; record: unknown },
  /** Authors already in index_actors: a hot consumer skips one statement per record. */
  knownActors?: Set<string>,
): Promise<'indexed' | 'skipped'> {
  const uri = `at://${r.did}/${r.collection}/${r.rkey}`;
  const nsid = r.collection === SESSION ? SESSION : r.collection === MESSAGE ? MESSAGE : null;
  if (!nsid || !indexable(r.did, r.collection, r.record)) {
    await removeRecord(sql, uri);
    await sql`update index_state set skipped = skipped + 1 where id`;
    return 'skipped';
  }
  const record = sql.json(r.record as JsonValue);
  if (nsid === SESSION) {
    const createdAt = (r.record as { createdAt: string }).createdAt;
    await sql`insert into index_sessions (uri, did, rkey, cid, record, created_at)
      values (${uri}, ${r.did}, ${r.rkey}, ${r.cid}, ${record}, ${new Date(createdAt)})
      on conflict (uri) do update set cid = excluded.cid, record = excluded.record, created_at = excluded.created_at`;
  } else {
    const session = (r.record as { session: string }).session;
    const view = JSON.stringify({ uri, cid: r.cid, record: r.record });
    await sql`insert into index_messages (uri, did, rkey, session_uri, cid, record, view)
      values (${uri}, ${r.did}, ${r.rkey}, ${session}, ${r.cid}, ${record}, ${view})
      on conflict (uri) do update set cid = excluded.cid, record = excluded.record, session_uri = excluded.session_uri,
        view = excluded.view, indexed_at = now()`;
  }
  if (!knownActors?.has(r.did)) {
    await sql`insert into index_actors (did) values (${r.did}) on conflict do nothing`;
    knownActors?.add(r.did);
  }
  return 'indexed';
}

/**
 * Many records of one author at once, in one statement per collection: the write-through after a publish.
 * Each record is still validated; invalid ones are skipped and counted like any other.
 */
export async function indexRecords(
  sql: Queryable,
  did: string | null,
  records: { did?: string; collection: string; rkey: string; cid: string; record: unknown }[],
): Promise<void> {
  const didOf = (r: { did?: string }) => r.did ?? did!;
  const uriOf = (r: { did?: string; collection: string; rkey: string }) =>
    `at://${didOf(r)}/${r.collection}/${r.rkey}`;
  // Within one batch the last version of a record wins (a batch upsert may not touch a row twice).
  const checked = records.map((r) => {
    // Serialised once: for the size check and, for a turn, the view served as it is.
    const json = JSON.stringify(r.record) ?? '';
    return { ...r, json, ok: indexable(didOf(r), r.collection, r.record, json.length) };
  });
  const skipped = checked.filter((r) => !r.ok).length;
  if (skipped) await sql`update index_state set skipped = skipped + ${skipped} where id`;
  const latest = [...new Map(checked.map((r) => [uriOf(r), r])).values()];
  // A record whose latest version is refused leaves the index, older versions with it: the author blanked it.
  const gone = latest.filter((r) => !r.ok).map(uriOf);
  if (gone.length) {
    await sql`delete from index_sessions where uri = any(${gone}::text[])`;
    await sql`delete from index_messages where uri = any(${gone}::text[])`;
  }
  const unique = latest.filter((r) => r.ok);
  const sessions = unique
    .filter((r) => r.collection === SESSION)
    .map((r) => ({
      uri: uriOf(r),
      did: didOf(r),
      rkey: r.rkey,
      cid: r.cid,
      record: sql.json(r.record as JsonValue),
      created_at: new Date((r.record as { createdAt: string }).createdAt),
    }));
  const messages = unique
    .filter((r) => r.collection === MESSAGE)
    .map((r) => ({
      uri: uriOf(r),
      did: didOf(r),
      rkey: r.rkey,
      session_uri: (r.record as { session: string }).session,
      cid: r.cid,
      record: sql.json(r.record as JsonValue),
      view: `{"uri":${JSON.stringify(uriOf(r))},"cid":${JSON.stringify(r.cid)},"record":${r.json}}`,
    }));
  if (sessions.length) {
    await sql`insert into index_sessions ${sql(sessions)} on conflict (uri) do update set cid = excluded.cid,
      record = excluded.record, created_at = excluded.created_at`;
  }
  for (let i = 0; i < messages.length; i += 500) {
    await sql`insert into index_messages ${sql(messages.slice(i, i + 500))} on conflict (uri) do update set
      cid = excluded.cid, record = excluded.record, session_uri = excluded.session_uri, view = excluded.view,
      indexed_at = now()`;
  }
  for (const d of new Set(unique.map(didOf)))
    await sql`insert into index_actors (did) values (${d}) on conflict do nothing`;
}

/** A deleted record goes at once: a copy must not outlive the author's deletion. */
export async function removeRecord(sql: Queryable, uri: string) {
  await sql`delete from index_sessions where uri = ${uri}`;
  await sql`delete from index_messages where uri = ${uri}`;
}

/** An account deleted or taken down: everything of it leaves the index. */
export async function purgeActor(sql: Queryable, did: string) {
  await sql`delete from index_sessions where did = ${did}`;
  await sql`delete from index_messages where did = ${did}`;
  await sql`delete from index_actors where did = ${did}`;
}

/**
 * An identity event's handle: verified both ways by the event stream's reader, or null when it no longer
 * verifies — then the handle is hidden and checked again before it is next shown.
 */
export async function setHandle(sql: Queryable, did: string, handle: string | null) {
  // Only authors the index already knows: the stream carries every account's identity events. A name that is
  // not a handle is never kept (a reader page and listSessions would show it, or fail on it).
  if (handle !== null && !isValidHandle(handle)) handle = null;
  await sql`update index_actors set handle = ${handle}, verified_at = ${handle ? new Date() : null}
    where did = ${did}`;
}

/** Where each event source's position is kept: a relay's sequence number, or Jetstream's time in µs. */
export type IngestSource = 'relay' | 'jetstream';

export async function readCursor(sql: Sql, source: IngestSource = 'relay'): Promise<number | undefined> {
  const [row] = await sql<{ cursor: string | null }[]>`select
    (case when ${source} = 'jetstream' then jetstream_cursor else cursor end)::text as cursor from index_state where id`;
  return row?.cursor ? Number(row.cursor) : undefined;
}

export async function saveCursor(sql: Sql, cursor: number, source: IngestSource = 'relay') {
  if (source === 'jetstream')
    await sql`update index_state set jetstream_cursor = ${cursor}, updated_at = now()
      where id and (jetstream_cursor is null or jetstream_cursor < ${cursor})`;
  else
    await sql`update index_state set cursor = ${cursor}, updated_at = now() where id and (cursor is null or cursor < ${cursor})`;
}
