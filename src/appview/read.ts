import { createHash } from 'node:crypto';
import { isValidDid as isDid } from '@atproto/syntax';
import type { Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { type PublishedAvatar, readAvatar } from '../lexicon/index.ts';
import { backfillActor } from './backfill.ts';
import {
  hidden,
  LARGE_THREAD_BYTES,
  MAX_THREAD_BYTES,
  MAX_THREAD_TURNS,
  REVERIFY_MS,
  sessionColumns,
  turnLabels,
  verifiedHandle,
} from './fragments.ts';
import { handleNow, lookUpAll } from './lookups.ts';
import type { Network } from './network.ts';
import { type BodyHead, readThreadBody } from './threadBody.ts';
import { keepThread, keptThread } from './threadCache.ts';
import { parseThread, type ThreadBounds } from './threadParse.ts';

export interface SessionView {
  uri: string;
  cid: string;
  author: { did: string; handle?: string };
  record: Record<string, unknown>;
  turns: number;
  indexedAt: string;
}
export interface MessageView {
  uri: string;
  cid: string;
  record: Record<string, unknown>;
}

interface SessionRow {
  /** Null while the author's account is active; a hidden author's threads are served to no one. */
  status: string | null;
  uri: string;
  cid: string;
  did: string;
  handle: string | null;
  verified_at: Date | null;
  record: Record<string, unknown>;
  turns: number;
  indexed_at: Date;
}

const toSessionView = (r: SessionRow): SessionView => ({
  uri: r.uri,
  cid: r.cid,
  author: r.handle ? { did: r.did, handle: r.handle } : { did: r.did },
  record: r.record,
  turns: r.turns,
  indexedAt: r.indexed_at.toISOString(),
});

/** A handle or DID to a DID: the index's own knowledge first, then the network. */
export async function resolveActor(sql: Sql, network: Network, actor: string): Promise<string | null> {
  if (isDid(actor)) return actor;
  // Only a handle verified within the day names a DID here; a handle that moved on answers for its new owner.
  const [row] = await sql<{ did: string }[]>`select did from index_actors
    where handle = ${actor.toLowerCase()} and verified_at > now() - make_interval(secs => ${REVERIFY_MS / 1000})
    order by verified_at desc limit 1`;
  if (row) return row.did;
  const did = await network.didOf(actor);
  // Kept as this DID's handle only when its DID document claims it back (bidirectional verification).
  if (did && (await network.identity(did))?.handle === actor.toLowerCase())
    await sql`insert into index_actors (did, handle, verified_at) values (${did}, ${actor.toLowerCase()}, now())
    on conflict (did) do update set handle = excluded.handle, verified_at = now()`;
  return did;
}

/**
 * An agent's avatar that a served session of this author references (ADR 0065), as the reader may show it: the
 * reader's avatar route fetches no other blob (it is no open proxy to anyone's PDS).
 */
export async function indexedAvatar(
  sql: Sql,
  did: string,
  cid: string,
): Promise<PublishedAvatar | undefined> {
  const rows = await sql<{ agents: unknown }[]>`
    select s.record->'agents' as agents from index_sessions s left join index_actors a on a.did = s.did
    where s.did = ${did} and not ${hidden(sql)}
      and s.record @> ${sql.json({ agents: [{ avatar: { ref: { $link: cid } } }] })}
    limit 5`;
  for (const { agents } of rows)
    for (const agent of Array.isArray(agents) ? agents : []) {
      const avatar = readAvatar((agent as { avatar?: unknown } | null)?.avatar);
      if (avatar?.cid === cid) return avatar;
    }
  return undefined;
}

/**
 * Handles for authors the index knows only by DID, or whose handle is due to be verified again (never, after
 * an identity event that did not verify, or a day ago): looked up within the per-read bound and kept.
 */
async function ensureHandles(sql: Sql, network: Network, rows: SessionRow[], reader = 'anonymous') {
  const due = (r: SessionRow) =>
    !r.handle || !r.verified_at || Date.now() - r.verified_at.getTime() > REVERIFY_MS;
  const dids = [...new Set(rows.filter(due).map((r) => r.did))];
  if (!dids.length) return;
  const found = await lookUpAll(
    dids,
    (did, keptOnly) => handleNow(network, did, reader, keptOnly),
    undefined,
  );
  for (const [did, handle] of found) {
    if (handle === undefined) continue; // past the bound: left for a later read
    // Still none, as the index already says: nothing to write (each anonymous read of such an author's thread
    // comes here, since a kept answer without a handle does not stop the handle being looked up).
    if (handle === null && rows.some((r) => r.did === did && !r.handle && !r.verified_at)) continue;
    await sql`update index_actors set handle = ${handle}, verified_at = ${handle ? new Date() : null}
      where did = ${did}`;
    for (const r of rows) if (r.did === did) r.handle = handle;
  }
}

/**
 * The XRPC getThread answer as JSON text, joined from each turn's view as indexed: a 1,000-turn thread is not
 * parsed into objects only to be serialised again. Backfills the author once when the index lacks the thread.
 */
export async function getThreadJson(
  sql: Sql,
  network: Network,
  uri: string,
  options: ThreadReadOptions = {},
): Promise<string | null> {
  return (await getThreadBody(sql, network, uri, options))?.body.toString() ?? null;
}

/** getThread's answer as the bytes sent, with an ETag drawn from the thread's version (nothing hashes the body). */
export interface ThreadBody {
  body: Buffer;
  etag: string;
  /** The thread's version it is of (index_thread_totals, the session's CID, the verified handle). */
  version: string;
  /** Where its session and each turn lie in `body` (threadParse.ts). */
  bounds: ThreadBounds;
  /** Its author, whose places its large read and parse take. */
  did: string;
}

/**
 * `deletedStaysGone`: a thread the index does not hold but holds a delete of is not looked for in its author's repo
 * (the reading pages, which say "deleted"). The reader's API and getThread look, and serve a thread published again
 * whose delete reached the index after it.
 */
export interface ThreadReadOptions {
  deletedStaysGone?: boolean;
  /** Who asked (`requesterKey`): a backfill this read starts takes its place in the pool under this key. */
  requester?: string;
}

export async function getThreadBody(
  sql: Sql,
  network: Network,
  uri: string,
  options: ThreadReadOptions = {},
): Promise<ThreadBody | null> {
  let head = await threadHead(sql, uri);
  if (head?.hidden) return null;
  // Unknown here (backfill) or known only by DID (look up the handle, within the lookups' bound and remembered):
  // before the cache, so that an answer kept without a handle does not keep the handle from being looked up.
  if (!head?.handle) {
    if (!(await getSessionView(sql, network, uri, options))) return null;
    head = await threadHead(sql, uri);
    if (!head || head.hidden) return null;
  }
  // Hot threads are served from memory while their version is unchanged: one lookup by key instead of
  // re-assembling a thousand turns. The version holds the verified handle, so one verified since is a new answer.
  const cached = keptThread(uri);
  if (cached && cached.version === head.version) return cached;
  // Readers of one version while it is read share that read (up to 16 MiB of rows each, otherwise).
  const reading = bodies.get(uri);
  if (reading?.version === head.version) return reading.answer;
  const read = readAnswer(sql, uri, head).finally(() => {
    if (bodies.get(uri)?.answer === read) bodies.delete(uri);
  });
  bodies.set(uri, { version: head.version, answer: read });
  return read;
}

/** Reads of thread answers under way, by thread: the version each is of. */
const bodies = new Map<string, { version: string; answer: Promise<ThreadBody> }>();

async function readAnswer(sql: Sql, uri: string, head: ThreadHead): Promise<ThreadBody> {
  const { body, bounds } = await readThreadBody(sql, uri, head);
  const answer = {
    version: head.version,
    body,
    bounds,
    did: head.did,
    // Drawn from the version (nothing hashes the body).
    etag: `W/"${createHash('sha1').update(head.version).digest('base64url')}"`,
  };
  // Kept whatever the handle: an author whose handle does not verify cost a whole read (up to 16 MiB) per request.
  keepThread(uri, answer);
  return answer;
}

interface ThreadHead extends BodyHead {
  /** The session CID, author handle, the thread's version (index_thread_totals) and its turns' hiding labels. */
  version: string;
  hidden: boolean;
  handle: string | null;
}

/**
 * What a thread read needs before its turns, in one lookup by key: whether it is served, whether it changed since
 * it was cached (its version moves with every change to its turns: index_thread_totals), how large it is (most
 * are far inside the bounds and are read whole, without the running sum), and its session's view.
 */
async function threadHead(sql: Sql, uri: string): Promise<ThreadHead | undefined> {
  const [head] = await sql<ThreadHead[]>`
    select s.did, s.cid || '|' || coalesce(${verifiedHandle(sql)}, '') || '|' || coalesce(t.version, 0)
        || '|' || coalesce(tl.stamp, '') as version,
      coalesce(t.turns > ${MAX_THREAD_TURNS} or t.bytes > ${MAX_THREAD_BYTES}, false) as bounded,
      coalesce(t.bytes > ${LARGE_THREAD_BYTES}, false) as large, coalesce(t.turns, 0) = 0 as empty,
      ${hidden(sql)} as hidden, tl.held > 0 as holes, ${verifiedHandle(sql)} as handle,
      json_build_object(
        'uri', s.uri, 'cid', s.cid, 'record', s.record,
        'indexedAt', to_char(s.indexed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'author', json_strip_nulls(json_build_object('did', s.did, 'handle', ${verifiedHandle(sql)})),
        'turns', coalesce(t.turns, 0))::text as session
    from index_sessions s left join index_actors a on a.did = s.did
      left join index_thread_totals t on t.session_uri = s.uri and t.did = s.did
      cross join ${turnLabels(sql)} tl
    where s.uri = ${uri}`;
  return head;
}

async function getSessionView(
  sql: Sql,
  network: Network,
  uri: string,
  options: ThreadReadOptions = {},
): Promise<SessionView | null> {
  const read = async () => {
    const [session] = await sql<SessionRow[]>`
      select ${sessionColumns(sql)} from index_sessions s left join index_actors a on a.did = s.did where s.uri = ${uri}`;
    return session;
  };
  let session = await read();
  if (!session) {
    const did = /^at:\/\/([^/]+)\//.exec(uri)?.[1];
    if (!did || !isDid(did)) return null;
    if (options.deletedStaysGone && (await isTombstoned(sql, uri))) return null;
    const finished = await backfillActor(sql, network, did, { requester: options.requester });
    session = await read();
    if (!session && !finished) throw indexing();
    if (!session) return null;
  }
  if (session.status) return null;
  await ensureHandles(sql, network, [session], options.requester);
  return toSessionView(session);
}

/** The index holds a delete of this record (and, had it been published again since, would hold the record). */
export async function isTombstoned(sql: Sql, uri: string): Promise<boolean> {
  const [row] = await sql`select 1 from index_tombstones where uri = ${uri}`;
  return row !== undefined;
}

/** The author's repo is still being read (a backfill outlasted the request): what is indexed, and when to ask. */
const indexing = () =>
  new AppError(
    'INDEXING',
    "This thread is not in the index yet: the author's records are being read. Try again in a few seconds.",
    { retryAfter: 5 },
  );

/** A thread as getThread answers it. */
export interface ThreadObjects {
  session: SessionView;
  messages: MessageView[];
}

// Each cached answer's objects, parsed once (a hot thread's 1,000 turns are not parsed again on every read) and
// frozen, as every reader of the thread shares them. An answer that was not cached is parsed for its one read.
const parsedOf = new WeakMap<ThreadBody, ThreadObjects>();

/**
 * The thread as objects, for the reader: the same cached, invalidated-on-change answer getThread's XRPC route
 * serves, parsed (so the reader and the network's readers never see two versions, and a hot thread is assembled
 * once for both).
 */
export async function getThread(
  sql: Sql,
  network: Network,
  uri: string,
  options: ThreadReadOptions = {},
): Promise<ThreadObjects | null> {
  const answer = await getThreadBody(sql, network, uri, options);
  if (!answer) return null;
  const parsed = parsedOf.get(answer);
  if (parsed) return parsed;
  // A parse lets the loop turn (threadParse.ts): readers that come meanwhile wait for the same one, whether they
  // were handed the same kept answer or read the same version themselves.
  const running = parsing.get(uri);
  let objects = running?.version === answer.version ? running.objects : undefined;
  if (!objects) {
    const parse = parseThread<SessionView, MessageView>(answer.did, answer.body, answer.bounds).finally(
      () => {
        if (parsing.get(uri)?.objects === parse) parsing.delete(uri);
      },
    );
    parsing.set(uri, { version: answer.version, objects: parse });
    objects = parse;
  }
  const done = await objects;
  if (keptThread(uri) === answer) parsedOf.set(answer, done);
  return done;
}

/** Parses under way, by thread: the version each is of, and its objects once parsed. */
const parsing = new Map<string, { version: string; objects: Promise<ThreadObjects> }>();

/**
 * The thread as last cached, whatever its version now: a reader that needs something per turn (their labels)
 * asks for it beside the version check, and asks again only if the turns turn out to have changed.
 */
export function cachedThread(uri: string): ThreadObjects | undefined {
  const answer = keptThread(uri);
  return answer && parsedOf.get(answer);
}

/** A listSessions cursor back into its (indexedAt, uri); anything else is the client's mistake (400). */
function readCursor(cursor: string): [string, string] {
  const [at, uri, extra] = Buffer.from(cursor, 'base64url').toString().split('|');
  const valid =
    extra === undefined &&
    at !== undefined &&
    /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(at) &&
    !Number.isNaN(Date.parse(at)) &&
    uri !== undefined &&
    /^at:\/\/[^/\s]+\/click\.aligned\.chat\.session\/[a-z2-7]{13}$/.test(uri);
  if (!valid) throw new AppError('InvalidRequest', 'The cursor is not one this server gave out.');
  return [at, uri];
}

export async function listSessions(
  sql: Sql,
  network: Network,
  /** `requester`: who asked (`requesterKey`), for the lookups of authors' handles. */
  opts: { did?: string; limit: number; cursor?: string; requester?: string },
): Promise<{ sessions: SessionView[]; cursor?: string }> {
  const [at, uri] = opts.cursor ? readCursor(opts.cursor) : [];
  const rows = await sql<SessionRow[]>`
    select ${sessionColumns(sql)} from index_sessions s left join index_actors a on a.did = s.did
    where not ${hidden(sql)}
      ${
        // Everyone's list shows what the network's stream delivered (or our own Players published), never
        // what an anonymous request made us fetch from a repo anyone can run: that is served only when asked for.
        opts.did ? sql`and s.did = ${opts.did}` : sql`and not s.from_backfill`
      }
      ${at && uri ? sql`and (s.indexed_at, s.uri) < (${new Date(at)}, ${uri})` : sql``}
    order by s.indexed_at desc, s.uri desc limit ${opts.limit}`;
  await ensureHandles(sql, network, rows, opts.requester);
  const last = rows.at(-1);
  return {
    sessions: rows.map(toSessionView),
    cursor:
      rows.length === opts.limit && last
        ? Buffer.from(`${last.indexed_at.toISOString()}|${last.uri}`).toString('base64url')
        : undefined,
  };
}

/** The newest published threads' addresses, for the sitemap: from the index alone (no handle lookups). */
export async function recentThreads(sql: Sql, limit: number): Promise<{ uri: string; indexedAt: string }[]> {
  const rows = await sql<{ uri: string; indexed_at: Date }[]>`
    select s.uri, s.indexed_at from index_sessions s left join index_actors a on a.did = s.did
    where not ${hidden(sql)} and not s.from_backfill order by s.indexed_at desc, s.uri desc limit ${limit}`;
  return rows.map((r) => ({ uri: r.uri, indexedAt: r.indexed_at.toISOString() }));
}
