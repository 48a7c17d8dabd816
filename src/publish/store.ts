import {
  type JsonValue,
  type Lease,
  LeaseBusyError,
  type Leases,
  type LeaseTerms,
  type Queryable,
  type Sql,
  transaction,
} from '../db/index.ts';
import { AppError } from '../http/index.ts';
import type { AgentChoices, Choices } from '../redaction/index.ts';
import type { RepoWrite, Written } from './repo.ts';

export interface Publication {
  conversationId: string;
  did: string;
  sessionRkey: string;
  title: string;
  status: 'publishing' | 'published' | 'unpublishing' | 'failed';
  error: string | null;
  /** Live publishing (ADR 0043): new turns follow after `liveDelaySeconds`, withheld if `liveWithhold`. */
  live: boolean;
  liveWithhold: boolean;
  liveDelaySeconds: number;
  /** When the next append goes out, if one is waiting. */
  liveDueAt: Date | null;
  /** When a run left part-way is tried again in the background (ADR 0091), if it is. */
  retryDueAt: Date | null;
}

export interface PublishedRecord {
  rkey: string;
  collection: string;
  messageId: string | null;
  position: number;
  choice: Record<string, unknown>;
  record: Record<string, unknown>;
  cid: string | null;
  pending: RepoWrite['action'] | null;
  /** The rev of the commit that last wrote it, when known: the index's write-through carries it (migration 047). */
  rev?: string | null;
}

/** The Player's choices for a Conversation, kept across unpublishing (see migration 009). */
export interface Draft {
  sessionRkey: string;
  /** The title the Player wrote; null for the default made from the published text. */
  title: string | null;
  choices: Choices;
  /** The words each turn's redactions covered, by Message id, kept for turns that have since gone. */
  words: Record<string, string[]>;
  /** What the session says of each NPC, by NPC id (migration 031). */
  agents: AgentChoices;
}

export async function getDraft(sql: Queryable, conversationId: string): Promise<Draft | undefined> {
  const [row] = await sql<Draft[]>`
    select session_rkey as "sessionRkey", title, choices, words, agents from publication_drafts
    where conversation_id = ${conversationId}`;
  return row;
}

/**
 * A Conversation's publication status (null: not published), as a scalar subquery on an id the caller's statement
 * holds: the Conversation list shows it in its one statement (wired into conversations/ by app.ts).
 */
export const publicationStatusSql = (
  q: Queryable,
  conversationId: ReturnType<Queryable>,
): ReturnType<Queryable> =>
  q`(select pub.status from publications pub where pub.conversation_id = ${conversationId})`;

export async function getPublication(
  sql: Queryable,
  conversationId: string,
): Promise<Publication | undefined> {
  const [row] = await sql<Publication[]>`
    select conversation_id as "conversationId", did, session_rkey as "sessionRkey", title, status, error, live,
      live_withhold as "liveWithhold", live_delay_seconds as "liveDelaySeconds", live_due_at as "liveDueAt",
      retry_due_at as "retryDueAt"
    from publications where conversation_id = ${conversationId}`;
  return row;
}

/** The turns the Player last reviewed and published, in order (ADR 0046). */
export async function getReviewedPath(sql: Queryable, conversationId: string): Promise<string[]> {
  const [row] = await sql<{ path: string[] }[]>`
    select reviewed_path::text[] as path from publications where conversation_id = ${conversationId}`;
  return row?.path ?? [];
}

export async function getPublishedRecords(
  sql: Queryable,
  conversationId: string,
): Promise<PublishedRecord[]> {
  return sql<PublishedRecord[]>`
    select rkey, collection, message_id as "messageId", position, choice, record, cid, pending, rev
    from publication_records where conversation_id = ${conversationId} order by position`;
}

/**
 * Stores the plan before any write: the publication and every record with the write it still needs. A
 * record already on the PDS and unchanged keeps `pending = null`.
 */
export async function savePlan(
  sql: Sql,
  plan: {
    publication: Pick<Publication, 'conversationId' | 'did' | 'sessionRkey' | 'title'> & { playerId: string };
    records: PublishedRecord[];
    draft: Draft;
  },
): Promise<void> {
  const p = plan.publication;
  const d = plan.draft;
  // The turns this plan publishes, in order: what the Player reviewed (or, live, what extends it; ADR 0046).
  const reviewed = plan.records
    .filter((r) => r.messageId && r.pending !== 'delete')
    .sort((a, b) => a.position - b.position)
    .map((r) => r.messageId!);
  await transaction(sql, async (tx) => {
    await tx`
      insert into publication_drafts (conversation_id, session_rkey, title, choices, words, agents)
      values (${p.conversationId}, ${d.sessionRkey}, ${d.title}, ${tx.json(d.choices as JsonValue)},
        ${tx.json(d.words as JsonValue)}, ${tx.json(d.agents as JsonValue)})
      on conflict (conversation_id) do update set session_rkey = excluded.session_rkey, title = excluded.title,
        choices = excluded.choices, words = excluded.words, agents = excluded.agents, updated_at = now()`;
    await tx`
      insert into publications (conversation_id, player_id, did, session_rkey, title, status, reviewed_path)
      values (${p.conversationId}, ${p.playerId}, ${p.did}, ${p.sessionRkey}, ${p.title}, 'publishing',
        ${reviewed}::uuid[])
      on conflict (conversation_id) do update set title = excluded.title, status = 'publishing', error = null,
        reviewed_path = excluded.reviewed_path, retry_due_at = null, retry_failures = 0, updated_at = now()`;
    // One statement and one JSON parameter per 500 records, not nine parameters a record (each sent and typed
    // on its own): 1,001 records saved in 15 ms against 22–70 in one measurement. Chunks keep one value's size
    // bounded whatever the Conversation's length.
    for (let i = 0; i < plan.records.length; i += 500) {
      const rows = plan.records.slice(i, i + 500).map((r) => ({
        rkey: r.rkey,
        collection: r.collection,
        message_id: r.messageId,
        position: r.position,
        choice: r.choice,
        record: r.record,
        cid: r.cid,
        pending: r.pending,
      }));
      await tx`
        insert into publication_records (conversation_id, rkey, collection, message_id, position, choice, record,
          cid, pending)
        select ${p.conversationId}, x.rkey, x.collection, x.message_id, x.position, x.choice, x.record, x.cid,
          x.pending
        from jsonb_to_recordset(${tx.json(rows as unknown as JsonValue)}) as x(rkey text, collection text,
          message_id uuid, position int, choice jsonb, record jsonb, cid text, pending text)
        on conflict (conversation_id, rkey) do update set position = excluded.position, choice = excluded.choice,
          record = excluded.record, pending = excluded.pending`;
    }
    // Rows the new plan no longer has and that never reached the PDS (a turn regenerated while a publish was
    // paused): dropped, so they are never written.
    await tx`delete from publication_records where conversation_id = ${p.conversationId} and cid is null
      and not (rkey = any(${plan.records.map((r) => r.rkey)}))`;
  });
}

/**
 * Stores what covering at once changed (coverAtOnce.ts): each named turn's redactions and words, merged into the
 * draft in the statement (a hold-back marked meanwhile, outside the publication lease, is kept), and each changed
 * record with its write; the publication goes to 'publishing', so a server that dies before the writes resumes
 * them at start. The rest of the plan (the title, the path reviewed) is left as it was.
 */
export async function saveCover(
  sql: Sql,
  conversationId: string,
  covered: {
    redactions: Record<string, unknown[]>;
    words: Record<string, string[]>;
    records: PublishedRecord[];
    /** Rows never written, of turns no longer on the path: dropped, as savePlan drops them. */
    stale: string[];
    /** Turns made holes: withheld in the draft (merged, as the redactions are). */
    withheld: string[];
    /** Of those, the ones the request withheld: what each keeps of its hole replaces what the draft kept. */
    keeps?: Record<string, { keepTime?: true; keepModel?: true }>;
  },
): Promise<void> {
  const rows = covered.records.map((r) => ({ rkey: r.rkey, record: r.record, pending: r.pending }));
  await transaction(sql, async (tx) => {
    await tx`update publication_drafts d set
        choices = d.choices || coalesce((select jsonb_object_agg(e.key,
          coalesce(d.choices -> e.key, '{}'::jsonb) || jsonb_build_object('redactions', e.value))
          from jsonb_each(${tx.json(covered.redactions as JsonValue)}) e), '{}'::jsonb),
        words = d.words || ${tx.json(covered.words as JsonValue)}, updated_at = now()
      where conversation_id = ${conversationId}`;
    if (covered.withheld.length) {
      const keeps = tx.json((covered.keeps ?? {}) as JsonValue);
      await tx`update publication_drafts set choices = choices || (select jsonb_object_agg(id,
          case when ${keeps}::jsonb -> id is null then coalesce(choices -> id, '{}'::jsonb) || '{"withheld": true}'::jsonb
          else (coalesce(choices -> id, '{}'::jsonb) - 'keepTime' - 'keepModel') || (${keeps}::jsonb -> id)
            || '{"withheld": true}'::jsonb end)
          from unnest(${covered.withheld}::text[]) as id)
        where conversation_id = ${conversationId}`;
    }
    if (covered.stale.length)
      await tx`delete from publication_records where conversation_id = ${conversationId} and cid is null
        and rkey = any(${covered.stale})`;
    if (!rows.length) return;
    await tx`update publications set status = 'publishing', error = null, updated_at = now()
      where conversation_id = ${conversationId}`;
    // In chunks, as savePlan writes: one value's size stays bounded whatever the Conversation's length.
    for (let i = 0; i < rows.length; i += 500) {
      const chunk = rows.slice(i, i + 500);
      await tx`update publication_records p set record = x.record, pending = x.pending
        from jsonb_to_recordset(${tx.json(chunk as unknown as JsonValue)}) as x(rkey text, record jsonb, pending text)
        where p.conversation_id = ${conversationId} and p.rkey = x.rkey`;
    }
  });
}

/** Whether any of these turns has a record out or owed. */
export async function hasRecords(sql: Sql, conversationId: string, messageIds: string[]): Promise<boolean> {
  const [row] = await sql<{ any: boolean }[]>`select exists (select 1 from publication_records
    where conversation_id = ${conversationId} and message_id = any(${messageIds}::uuid[])) as any`;
  return row!.any;
}

export async function pendingWrites(sql: Sql, conversationId: string): Promise<RepoWrite[]> {
  const rows = await sql<PublishedRecord[]>`
    select rkey, collection, record, pending from publication_records
    where conversation_id = ${conversationId} and pending is not null order by position`;
  return rows.map((r) =>
    r.pending === 'delete'
      ? { action: 'delete', collection: r.collection, rkey: r.rkey }
      : { action: r.pending!, collection: r.collection, rkey: r.rkey, value: r.record },
  );
}

/** Records that the PDS now matches. Deleted ones leave the table. */
export async function markWritten(
  sql: Sql,
  conversationId: string,
  writes: RepoWrite[],
  { cids, rev }: Written,
) {
  const deleted = writes.filter((w) => w.action === 'delete').map((w) => w.rkey);
  const written = writes.flatMap((w, i) =>
    w.action === 'delete' ? [] : [{ rkey: w.rkey, cid: cids[i] ?? null }],
  );
  await transaction(sql, async (tx) => {
    if (deleted.length) {
      await tx`delete from publication_records where conversation_id = ${conversationId} and rkey = any(${deleted})`;
    }
    if (written.length) {
      await tx`update publication_records p set pending = null, cid = w.cid, rev = ${rev}
        from (select * from jsonb_to_recordset(${tx.json(written as unknown as JsonValue)}) as x(rkey text, cid text)) w
        where p.conversation_id = ${conversationId} and p.rkey = w.rkey`;
    }
  });
}

export async function setStatus(
  sql: Sql,
  conversationId: string,
  status: Publication['status'],
  error: string | null,
) {
  // Published: nothing is left to try again (ADR 0091).
  await sql`update publications set status = ${status}, error = ${error}, updated_at = now(),
      retry_due_at = case when ${status} = 'published' then null else retry_due_at end,
      retry_failures = case when ${status} = 'published' then 0 else retry_failures end
    where conversation_id = ${conversationId}`;
}

export async function markAllForDeletion(sql: Sql, conversationId: string) {
  await transaction(sql, async (tx) => {
    await tx`update publications set status = 'unpublishing', retry_due_at = null, retry_failures = 0,
      updated_at = now() where conversation_id = ${conversationId}`;
    // Never written: nothing to delete on the PDS.
    await tx`delete from publication_records where conversation_id = ${conversationId} and cid is null and pending = 'create'`;
    await tx`update publication_records set pending = 'delete' where conversation_id = ${conversationId}`;
  });
}

export async function dropPublication(sql: Sql, conversationId: string) {
  await sql`delete from publications where conversation_id = ${conversationId}`;
}

/** Publications left mid-write (a crash, a rate limit): resumed at start. */
export async function unfinishedPublications(sql: Sql): Promise<{ conversationId: string; did: string }[]> {
  return sql`select conversation_id as "conversationId", did from publications
    where status in ('publishing', 'unpublishing')`;
}

/** How a publication lease is held (ADR 0054): the argument for these numbers is there. */
export const PUBLICATION_LEASE: LeaseTerms = { ttlMs: 45_000, waitMs: 60_000 };

/** The lease a Conversation's publication is changed under. */
export const publicationLease = (conversationId: string) => `publication:${conversationId}`;

/**
 * Runs `fn` while holding the Conversation's publication lease (ADR 0043, 0054): a publish by hand, an
 * unpublish, a live append on any server and a hold never interleave, so none plans from what another is about
 * to replace. Publishing waits on the Player's own PDS, so the lease holds no connection: it is a row with an
 * expiry, renewed while `fn` runs, and every call to the PDS under it is fenced by it (auth/playerCalls.ts).
 * In this process one request per Conversation waits for the row, the others in line in memory; a wait past
 * a minute is a 503.
 */
export async function withPublicationLock<T>(
  leases: Leases,
  conversationId: string,
  fn: (lease: Lease) => Promise<T>,
): Promise<T> {
  return leases.hold(publicationLease(conversationId), PUBLICATION_LEASE, fn).catch((e: unknown) => {
    throw e instanceof LeaseBusyError
      ? new AppError(
          'PUBLICATION_BUSY',
          'Another change to this publication is still going out. Try again in a minute.',
          { retryAfter: 30 },
        )
      : e;
  });
}
