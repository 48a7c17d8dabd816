import { type Queryable, type Sql, transaction } from '../db/index.ts';
import { holeView, LARGE_THREAD_BYTES, MAX_THREAD_BYTES, MAX_THREAD_TURNS, turnHidden } from './fragments.ts';
import { busyReading, largeThreadPlaces } from './places.ts';
import type { ThreadBounds } from './threadParse.ts';

/** What reading a thread's turns needs to know of it first (read.ts's head). */
export interface BodyHead {
  did: string;
  /** The session's view as JSON text. */
  session: string;
  /** A turn is hidden by a label: each turn is asked whether it is a hole. */
  holes: boolean;
  /** Past the bounds (turns or bytes): read as large, with the running sum that stops at them. */
  bounded: boolean;
  /** Its turns hold more than `LARGE_THREAD_BYTES`: read in a place, with the running sum. */
  large: boolean;
  /** It had no turns (a session published, its turns not indexed yet). */
  empty: boolean;
}

/** Longest a large read's statement runs (PostgreSQL ends it), and longest it holds its place. */
export const LARGE_READ_STATEMENT_MS = 25_000;
const LARGE_READ_HOLD_MS = LARGE_READ_STATEMENT_MS + 5_000;
/**
 * Large reads, in places (ADR 0089): each holds up to 16 MiB of rows and their joined copy, and a connection of the
 * pool the turns' hot path uses (four on two cores) while they stream, and any repo may publish many such threads and
 * have them read — each read of one not kept (or since evicted) is a whole read. One at a time; waiting reads hold
 * nothing yet, so more may wait than parses do. Small threads are read without a place.
 */
export const LARGE_READS_AT_ONCE = 1;
export const LARGE_READS_WAITING = 16;
const largeReads = largeThreadPlaces({
  atOnce: LARGE_READS_AT_ONCE,
  waiting: LARGE_READS_WAITING,
  holdMs: LARGE_READ_HOLD_MS,
});

/** Large reads under way now, and one author's waiting (tests). */
export const largeReadsNow = (): number => largeReads.held;
export const largeReadsWaitingBy = (author: string): number => largeReads.waitingBy(author);

/**
 * A thread's answer as bytes: its session's view and each turn's as indexed (rendered when indexed: nothing is
 * parsed here), a hidden turn's as a hole (asked per turn only when the thread has one). The rows come as the bytes
 * PostgreSQL sent, in key order from the (session_uri, did, rkey) index, and are joined here: no aggregate copies and
 * sorts them in the database, and no string is decoded and encoded again on the way out.
 */
export async function readThreadBody(
  sql: Sql,
  uri: string,
  head: BodyHead,
  statementMs = LARGE_READ_STATEMENT_MS,
): Promise<{ body: Buffer; bounds: ThreadBounds }> {
  // No turns when its head was read (a session whose turns are not indexed yet): empty, as of that head's version.
  if (head.empty) return joinThread(head.session, []);
  if (!head.large && !head.bounded) {
    const rows = await smallRows(sql, uri, head);
    // None: since its head it has grown out of the small bounds (the statement reads nothing then), or lost every
    // turn. Read as large.
    if (rows.length) return joinThread(head.session, rows);
  }
  return largeReads.run(head.did, (signal) => {
    const until = Date.now() + LARGE_READ_HOLD_MS;
    // On a connection of its own, PostgreSQL ending the statement at its time: a cancel sent from here stops
    // whatever that backend runs when it arrives, which on a shared connection may be the next request's statement.
    return transaction(sql, async (tx) => {
      // Not past its place's time, however long a connection took to come.
      const ms = Math.min(statementMs, until - Date.now());
      if (signal.aborted || ms < 1) throw busyReading();
      tx`select set_config('statement_timeout', ${String(ms)}, true)`.execute().catch(() => {});
      return joinThread(head.session, await boundedRows(tx, uri, head));
    }).catch((e: unknown) => {
      throw (e as { code?: string }).code === QUERY_CANCELED ? busyReading() : e;
    });
  });
}

/** PostgreSQL's code for a statement ended by its timeout. */
const QUERY_CANCELED = '57014';

const viewOf = (sql: Queryable, head: BodyHead) =>
  head.holes ? sql`case when ${turnHidden(sql)} then ${holeView(sql)} else m.view end` : sql`m.view`;

/**
 * A small thread's rows, whole: only while its totals, in the statement's own snapshot (triggers keep them in the
 * rows' transaction), still say it is small; nothing otherwise. It may have grown since its head was read.
 */
function smallRows(sql: Sql, uri: string, head: BodyHead) {
  return sql`select ${viewOf(sql, head)} as view from index_messages m
    where m.session_uri = ${uri} and m.did = ${head.did}
      and coalesce((select t.bytes <= ${LARGE_THREAD_BYTES} and t.turns <= ${MAX_THREAD_TURNS}
        from index_thread_totals t where t.session_uri = ${uri} and t.did = ${head.did}), false)
    order by m.rkey`.raw();
}

/** A thread's rows within the bounds, by their running sum: whatever it has become since its head was read. */
function boundedRows(sql: Queryable, uri: string, head: BodyHead) {
  return sql`select t.view from (
      select ${viewOf(sql, head)} as view, m.rkey, sum(octet_length(m.view)) over (order by m.rkey) as upto
      from index_messages m where m.session_uri = ${uri} and m.did = ${head.did}
      order by m.rkey limit ${MAX_THREAD_TURNS}) t
    where t.upto <= ${MAX_THREAD_BYTES} order by t.rkey`.raw();
}

/** `{"session":…,"messages":[…]}` from the session's view and the turns' bytes, with where each lies in it. */
function joinThread(session: string, rows: ArrayLike<unknown[]>): { body: Buffer; bounds: ThreadBounds } {
  const head = Buffer.from(session);
  const parts: Buffer[] = [SESSION_KEY, head, MESSAGES_KEY];
  const bounds = new Uint32Array(2 * rows.length + 2);
  bounds[0] = SESSION_KEY.length;
  bounds[1] = bounds[0] + head.length;
  let at = bounds[1] + MESSAGES_KEY.length;
  for (let i = 0; i < rows.length; i++) {
    const turn = rows[i]![0] as Buffer;
    if (i) {
      parts.push(COMMA);
      at += COMMA.length;
    }
    parts.push(turn);
    bounds[2 * i + 2] = at;
    at += turn.length;
    bounds[2 * i + 3] = at;
  }
  parts.push(END);
  return { body: Buffer.concat(parts), bounds };
}

const SESSION_KEY = Buffer.from('{"session":');
const MESSAGES_KEY = Buffer.from(',"messages":[');
const COMMA = Buffer.from(',');
const END = Buffer.from(']}');
