import { isValidHandle } from '@atproto/syntax';
import { LOCKS, type Queryable, type Sql, transaction } from '../db/index.ts';
import { isValidRecord, MESSAGE, SESSION } from '../lexicon/index.ts';
import { metrics } from '../metrics/index.ts';
import { wellFormed } from '../parts/index.ts';
import { shapeProblem } from './shape.ts';
import { stagesOf } from './versions.ts';

export { pruneTombstones, removeRecord, removeRecords, TOMBSTONE_DAYS } from './removals.ts';

export const COLLECTIONS = [SESSION, MESSAGE] as const;

/**
 * Larger than any record valid to the lexicons, as JSON text: a turn's text (150,000 bytes; a control
 * character escapes to six characters), 100 steps, 50 refs of up to 8 KB at-uris and 50 DIDs come to about
 * 940,000 characters at the very most. Anything past it is not a turn.
 */
export const MAX_RECORD_CHARS = 1024 * 1024;

/**
 * Why a record from the network may not be indexed, or null when it may: one of ours, of a sane shape (checked
 * iteratively first, since everything after recurses), valid to its lexicon, storable as jsonb, and — for a
 * turn — in a session of its own author. Any repo can hold any record: a turn naming somebody else's session
 * must not appear in their thread. Never throws, whatever the record.
 */
export function refusal(
  did: string,
  collection: string,
  record: unknown,
  /** The record's JSON length when the caller has it already. */
  jsonChars?: number,
): string | null {
  if (collection !== SESSION && collection !== MESSAGE) return 'not one of our collections';
  const shape = shapeProblem(record);
  if (shape) return shape;
  try {
    if (!isValidRecord(collection, record)) return 'not valid to its lexicon';
    // NUL or half a surrogate pair: valid to the lexicon, refused by jsonb. Such a record cannot be kept as
    // written, so it is skipped like an invalid one — never retried for ever, holding up the stream.
    if (wellFormed(record) !== record) return 'text PostgreSQL cannot store';
    if ((jsonChars ?? JSON.stringify(record).length) > MAX_RECORD_CHARS) return 'too large';
  } catch {
    return 'unreadable';
  }
  if (collection === MESSAGE && !sessionOf(record).startsWith(`at://${did}/${SESSION}/`))
    return "a turn in another author's session";
  // Valid to the lexicon yet refused by PostgreSQL (year 0, year 10000+): one such record would split every
  // batch it is in.
  const year = new Date((record as { createdAt: string }).createdAt).getUTCFullYear();
  if (!(year >= 1 && year <= 9999)) return 'a time PostgreSQL cannot store';
  return null;
}

export const indexable = (did: string, collection: string, record: unknown) =>
  refusal(did, collection, record) === null;

const sessionOf = (record: unknown) => (record as { session: string }).session;

export interface IndexInput {
  did?: string;
  collection: string;
  rkey: string;
  cid: string;
  record: unknown;
  /** The repo rev of the commit that wrote it, when the event carried one. */
  rev?: string;
  /** Why it may not be indexed, decided where it was read (see `Op`): not checked again. */
  refused?: string;
}

export interface IndexOptions {
  /**
   * Records a backfill read from the author's repo, starting at `since`: a delete or a newer version the index
   * took after that wins over them, and they are not listed for everyone until the network's stream vouches.
   */
  backfill?: { since: Date };
  /** Told of each record refused, with why (the caller logs it with its URI). */
  onSkip?: (uri: string, reason: string) => void;
  /**
   * Our own write-through, just written to the author's PDS: the tombstones it supersedes go (a thread
   * unpublished and published again keeps its session's rkey). A delete newer than the version written stays:
   * a record written by an earlier publish, indexed again, must not undo a delete made since (another client).
   * A version of unknown rev (its write's answer was lost) still clears them, as it is the one just written:
   * those made before `writtenSince` (a publish's start, on the database's clock) when given, so that a delete
   * made with another client while the publish ran stays.
   */
  written?: boolean;
  writtenSince?: Date;
}

/**
 * Records into the index, one statement per collection: the stream's batches, a backfill's pages and the
 * write-through after a publish. Each record is validated; refused ones are skipped, counted and reported, and
 * any older version of them dropped (the author blanked it). Upserts by at-uri, so replaying is harmless; a
 * version older than a delete (a tombstone) or than the row's own rev is not written.
 */
export async function indexRecords(
  sql: Queryable,
  did: string | null,
  records: IndexInput[],
  opts: IndexOptions = {},
): Promise<void> {
  const checked = checkRecords(did, records, opts.onSkip);
  const skipped = checked.filter((r) => !r.ok).length;
  if (skipped) await sql`update index_state set skipped = skipped + ${skipped} where id`;
  for (const stage of stagesOf(checked, opts.backfill !== undefined)) await writeStage(sql, stage, opts);
}

/** One stage of a batch (versions.ts), each record once: refused ones dropped, kept ones written. */
async function writeStage(sql: Queryable, latest: Checked[], opts: IndexOptions): Promise<void> {
  const since = opts.backfill?.since ?? null;
  const refused = latest.filter((r) => !r.ok);
  if (refused.length) await dropRefused(sql, refused, since);
  const kept = latest.filter((r) => r.ok);
  if (opts.written && kept.length)
    await sql`delete from index_tombstones t
      using unnest(${kept.map((r) => r.uri)}::text[], ${kept.map((r) => r.rev ?? null)}::text[]) as w(uri, rev)
      where t.uri = w.uri and case when w.rev is null
        then ${opts.writtenSince ?? null}::timestamptz is null or t.deleted_at < ${opts.writtenSince ?? null}::timestamptz
        else t.rev is null or t.rev < w.rev end`;
  const unique = await afterTombstones(sql, kept, opts.backfill?.since);
  await upsertRecords(sql, unique, since);
}

/** A record of a batch, with its author and at-uri resolved, its JSON text and whether it may be indexed. */
type Checked = IndexInput & { did: string; uri: string; json: string; ok: boolean };

/** Each record validated; a refused one is reported to `onSkip` with why. */
function checkRecords(did: string | null, records: IndexInput[], onSkip: IndexOptions['onSkip']): Checked[] {
  return records.map((r) => {
    const author = r.did ?? did!;
    const uri = `at://${author}/${r.collection}/${r.rkey}`;
    const why = r.refused || refusal(author, r.collection, r.record, 0);
    // Serialised once, and only once the shape is known to be sane: for the size check and, for a turn, the
    // view served as it is.
    const json = why ? '' : (JSON.stringify(r.record) ?? '');
    const reason = why ?? (json.length > MAX_RECORD_CHARS ? 'too large' : null);
    if (reason) onSkip?.(uri, reason);
    return { ...r, did: author, uri, json, ok: reason === null };
  });
}

/**
 * A refused latest version takes an older one out of the index (the author blanked it) — not a newer one. One
 * statement per table for the whole batch: a stream with many refused records (any repo can write them) cost
 * two round trips each.
 */
async function dropRefused(sql: Queryable, refused: Checked[], since: Date | null): Promise<void> {
  for (const table of ['index_sessions', 'index_messages'] as const) {
    const t = sql(table);
    await sql`delete from ${t} using unnest(${refused.map((r) => r.uri)}::text[],
        ${refused.map((r) => r.rev ?? null)}::text[]) as r(uri, rev)
      where ${t}.uri = r.uri and ${
        // As newer() decides: a backfill's by time, the stream's by the refused version's rev (none: any row).
        since
          ? sql`${t}.written_at < ${since}`
          : sql`(r.rev is null or ${t}.rev is null or ${t}.rev <= r.rev)`
      }`;
  }
}

/**
 * The kept records written: sessions, turns (500 a statement) and their authors. A backfill's copy never
 * replaces a version written after it began; a stream's never one of a later rev.
 */
async function upsertRecords(sql: Queryable, unique: Checked[], since: Date | null): Promise<void> {
  const fromBackfill = since !== null;
  const sessions = unique
    .filter((r) => r.collection === SESSION)
    .map((r) => ({
      uri: r.uri,
      did: r.did,
      rkey: r.rkey,
      cid: r.cid,
      // Its JSON text, made once in checkRecords: PostgreSQL reads it as jsonb (an untyped parameter).
      record: r.json,
      created_at: new Date((r.record as { createdAt: string }).createdAt),
      rev: r.rev ?? null,
      from_backfill: fromBackfill,
    }));
  const messages = unique
    .filter((r) => r.collection === MESSAGE)
    .map((r) => ({
      uri: r.uri,
      did: r.did,
      rkey: r.rkey,
      session_uri: (r.record as { session: string }).session,
      cid: r.cid,
      record: r.json,
      view: `{"uri":${JSON.stringify(r.uri)},"cid":${JSON.stringify(r.cid)},"record":${r.json}}`,
      rev: r.rev ?? null,
      from_backfill: fromBackfill,
    }));
  if (sessions.length) {
    await sql`insert into index_sessions ${sql(sessions)} on conflict (uri) do update set cid = excluded.cid,
      record = excluded.record, created_at = excluded.created_at, rev = coalesce(excluded.rev, index_sessions.rev),
      written_at = now(),
      from_backfill = index_sessions.from_backfill and excluded.from_backfill
      where ${newer(sql, 'index_sessions', since)}`;
  }
  for (let i = 0; i < messages.length; i += 500) {
    await sql`insert into index_messages ${sql(messages.slice(i, i + 500))} on conflict (uri) do update set
      cid = excluded.cid, record = excluded.record, session_uri = excluded.session_uri, view = excluded.view,
      indexed_at = now(), rev = coalesce(excluded.rev, index_messages.rev), written_at = now(),
      from_backfill = index_messages.from_backfill and excluded.from_backfill
      where ${newer(sql, 'index_messages', since)}`;
  }
  for (const d of new Set(unique.map((r) => r.did)))
    await sql`insert into index_actors (did) values (${d}) on conflict do nothing`;
}

/**
 * Whether an upsert may replace the row in `table`: a backfill's only a row written before it began; a stream's
 * only a row of an older (or unknown) rev than the upsert's `excluded.rev`.
 */
function newer(sql: Queryable, table: 'index_sessions' | 'index_messages', since: Date | null) {
  const t = sql(table);
  if (since) return sql`${t}.written_at < ${since}`;
  return sql`(excluded.rev is null or ${t}.rev is null or ${t}.rev <= excluded.rev)`;
}

/** Drops the records a kept delete is newer than: by rev for the stream's, by time for a backfill's. */
async function afterTombstones<T extends { uri: string; rev?: string }>(
  sql: Queryable,
  records: T[],
  since: Date | undefined,
): Promise<T[]> {
  if (!records.length) return records;
  const uris = records.map((r) => r.uri);
  const stones = await sql<{ uri: string; rev: string | null; deleted_at: Date }[]>`
    select uri, rev, deleted_at from index_tombstones where uri = any(${uris}::text[])`;
  if (!stones.length) return records;
  const byUri = new Map(stones.map((t) => [t.uri, t]));
  return records.filter((r) => {
    const t = byUri.get(r.uri);
    if (!t) return true;
    if (since) return t.deleted_at < since;
    // A delete of unknown rev (our own write-through's) holds back backfills only; the stream's own delete
    // brings its rev soon after.
    return t.rev === null || (r.rev !== undefined && r.rev > t.rev);
  });
}

/** The URIs the index holds of one session: its session record and its turns. */
export async function indexedUris(sql: Queryable, sessionUri: string): Promise<string[]> {
  const rows = await sql<{ uri: string }[]>`
    select uri from index_messages where session_uri = ${sessionUri}
    union select uri from index_sessions where uri = ${sessionUri}`;
  return rows.map((r) => r.uri);
}

/**
 * Serialises writes of one author's records between a backfill and the stream's deletes: the backfill checks
 * tombstones and writes in one transaction under it, so a delete cannot land between its check and its write.
 */
export function underAuthorLock<T>(sql: Sql, did: string, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return transaction(sql, async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCKS.indexAuthor}, hashtext(${did}))`;
    return fn(tx);
  });
}

/**
 * The stream's upserts of a batch's authors, each author's lock held shared: a publish's write-through (which
 * removes under the exclusive lock) cannot land between the batch's tombstone check and its write. Without it an
 * older version read as not deleted was written back just after the unpublish removed it. Shared holders never
 * wait on each other; an exclusive holder holds one author at a time, and the locks are taken in one order.
 */
export function underAuthorsShared<T>(
  sql: Sql,
  dids: string[],
  fn: (tx: Queryable) => Promise<T>,
): Promise<T> {
  return transaction(sql, async (tx) => {
    await tx`select pg_advisory_xact_lock_shared(${LOCKS.indexAuthor}, h)
      from (select distinct hashtext(d) as h from unnest(${dids}::text[]) as d order by h) as authors`;
    return fn(tx);
  });
}

/**
 * An account deleted or taken down: everything of it leaves the index, and the author's row stays with that
 * status, so that no backfill (anyone can ask for any DID) brings it back. Under the author's lock (see
 * `underAuthorLock`): a backfill running beside it cannot write after it.
 */
export async function purgeActor(sql: Queryable, did: string, status = 'takendown') {
  await sql`delete from index_sessions where did = ${did}`;
  await sql`delete from index_messages where did = ${did}`;
  await setStatus(sql, did, status);
}

/**
 * An account's status from the network: null when active. Any other (deactivated, suspended, desynchronized,
 * throttled, or a bare inactive) hides the author's threads from every read until it is active again — a
 * service should not redistribute the content of an account that is not active. Kept for authors the index
 * does not know yet too, so a backfill later does not read an account that is not active.
 */
export async function setStatus(sql: Queryable, did: string, status: string | null) {
  if (status === null) await sql`update index_actors set status = null where did = ${did}`;
  else
    await sql`insert into index_actors (did, status) values (${did}, ${status})
      on conflict (did) do update set status = excluded.status, handle = case when excluded.status in
        ('takendown', 'deleted') then null else index_actors.handle end`;
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

/**
 * The indexer's figure kept in the database, read when /metrics is scraped (metrics/ is handed this by app.ts):
 * how old its cursor is (Jetstream's time when it follows Jetstream, else when the relay's cursor last moved).
 * One row, one statement.
 */
export async function readIndexerFigures(sql: Sql): Promise<void> {
  const [row] = await sql<{ age: number | null }[]>`select extract(epoch from now() - case
        when jetstream_cursor is not null then to_timestamp(jetstream_cursor / 1e6)
        else updated_at end)::float8 as age
      from index_state where id`;
  if (row?.age != null) metrics.indexerCursorAge.set(row.age);
}

/** Where Jetstream stopped: its time, and its own event number on the instance (`host`) that sent it. */
export interface JetstreamPosition {
  timeUs?: number;
  seq?: number;
  host?: string;
}

export async function readJetstreamPosition(sql: Sql): Promise<JetstreamPosition> {
  const [row] = await sql<{ t: string | null; seq: string | null; host: string | null }[]>`
    select jetstream_cursor::text as t, jetstream_seq::text as seq, jetstream_host as host from index_state where id`;
  return {
    ...(row?.t ? { timeUs: Number(row.t) } : {}),
    ...(row?.seq && row.host ? { seq: Number(row.seq), host: row.host } : {}),
  };
}

export async function saveCursor(
  sql: Sql,
  cursor: number,
  source: IngestSource = 'relay',
  /** Jetstream v2's event number, and the instance it belongs to. */
  seq?: { seq: number; host: string },
) {
  if (source === 'jetstream')
    await sql`update index_state set jetstream_cursor = ${cursor}, updated_at = now(),
        -- The number only moves forward on one instance; an event without one (a v1 instance) forgets it.
        jetstream_seq = case when ${seq?.host ?? null}::text is null then null
          when jetstream_host is distinct from ${seq?.host ?? null} or jetstream_seq is null
            or jetstream_seq < ${seq?.seq ?? null}::bigint then ${seq?.seq ?? null}::bigint else jetstream_seq end,
        jetstream_host = ${seq?.host ?? null}
      where id and (jetstream_cursor is null or jetstream_cursor < ${cursor})`;
  else
    await sql`update index_state set cursor = ${cursor}, updated_at = now() where id and (cursor is null or cursor < ${cursor})`;
}
