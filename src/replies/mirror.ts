import { replyState, streamingReplies } from '../conversations/index.ts';
import type { JsonValue, Sql } from '../db/index.ts';
import type { Frame, Part, StartFrame } from '../parts/index.ts';
import type { ReplyHub, Snapshot } from './hub.ts';

const ATTACH = 'av_reply_attach';
const STOP = 'av_reply_stop';
const FRAMES = 'av_reply_frames';

/** The first row a reply's mirror writes: what a viewer elsewhere starts from. */
interface SnapshotRow {
  type: 'snapshot';
  start: StartFrame;
  parts: Part[];
}

export type Followed = { snapshot: Snapshot } | { frame: Frame; seq: number };

/**
 * Replies followed across server instances, through PostgreSQL (ADR 0037). A viewer on instance B asks the
 * owner A (NOTIFY) to mirror a reply; A writes the reply's snapshot and then each later frame, numbered, to
 * `reply_frames` (a batch every few ms, one statement, then a NOTIFY naming the reply), and B reads what is new
 * after the last number it delivered: no gap and no duplicate, whatever B's timing. Stop requests travel the
 * same way. Nothing is written for a reply nobody follows from elsewhere.
 */
export class ReplyMirror {
  readonly #wakers = new Map<string, Set<() => void>>();
  #queue: { message_id: string; seq: number; frame: unknown }[] = [];
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;
  #listening: Promise<unknown> | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly hub: ReplyHub,
    private readonly log: (message: string, error?: unknown) => void,
    private readonly batchMs = 15,
  ) {}

  /** Listens for attach and stop requests for replies written here, and for new frames of replies followed here. */
  start(): Promise<unknown> {
    this.#listening ??= Promise.all([
      this.sql.listen(ATTACH, (id) => this.#onAttach(id)),
      this.sql.listen(STOP, (id) => this.hub.stop(id)),
      this.sql.listen(FRAMES, (id) => {
        for (const wake of this.#wakers.get(id) ?? []) wake();
      }),
    ]);
    return this.#listening;
  }

  /** Stops listening (at shutdown, before the pool closes: a listener would otherwise try to reconnect). */
  async stop(): Promise<void> {
    const listeners = (await this.#listening?.catch(() => [])) as { unlisten(): Promise<void> }[] | undefined;
    await Promise.all((listeners ?? []).map((l) => l.unlisten().catch(() => {})));
    this.#listening = undefined;
  }

  /** Asks whichever instance writes the reply to stop it (this one included). */
  async requestStop(messageId: string): Promise<void> {
    if (this.hub.stop(messageId)) return;
    await this.sql`select pg_notify(${STOP}, ${messageId})`;
  }

  #onAttach(messageId: string) {
    if (this.hub.isMirrored(messageId)) return;
    const snapshot = this.hub.mirror(messageId, (n) => this.#enqueue(messageId, n.seq, n.frame));
    if (!snapshot) return;
    const row: SnapshotRow = { type: 'snapshot', start: snapshot.start, parts: snapshot.parts };
    // Written at once: a follower waits for nothing but this row to show the reply.
    this.#enqueue(messageId, snapshot.seq, row, 0);
  }

  #enqueue(messageId: string, seq: number, frame: unknown, delayMs = this.batchMs) {
    this.#queue.push({ message_id: messageId, seq, frame });
    this.#timer ??= setTimeout(() => this.#flush(), delayMs);
  }

  /** One write at a time, in order; what arrives meanwhile goes in the next. */
  async #flush() {
    this.#timer = undefined;
    if (this.#writing) {
      await this.#writing;
      if (this.#queue.length) this.#timer ??= setTimeout(() => this.#flush(), 0);
      return;
    }
    const rows = this.#queue;
    this.#queue = [];
    if (!rows.length) return;
    this.#writing = (async () => {
      const write = () => this.sql`
          with written as (
            insert into reply_frames (message_id, seq, frame)
            select v.message_id, v.seq, v.frame
            from jsonb_to_recordset(${this.sql.json(rows as unknown as JsonValue)}) as v(message_id uuid, seq integer, frame jsonb)
            on conflict do nothing
            returning message_id)
          select pg_notify(${FRAMES}, message_id::text) from (select distinct message_id from written) w`;
      // Tried twice: a follower treats a missing frame as a broken stream (and says to reload).
      await write()
        .catch(() => write())
        .catch((e) => this.log('reply frames not mirrored', e));
    })();
    await this.#writing;
    this.#writing = undefined;
    if (this.#queue.length) this.#timer ??= setTimeout(() => this.#flush(), 0);
  }

  /**
   * Follows a reply written by another instance: its snapshot, then each frame, in order, to `deliver`, until its
   * `finish` frame. When the owner dies, the reply is marked interrupted (as liveness would) and followed to that
   * end, within about `checkMs`. Resolves when the reply has ended or `signal` aborts.
   */
  async follow(
    messageId: string,
    deliver: (f: Followed) => void,
    signal: AbortSignal,
    checkMs = 1000,
  ): Promise<'finished' | 'ended' | 'aborted'> {
    await this.start();
    const reader = new FrameReader(this.sql, messageId, deliver);
    const wakers = this.#wakers.get(messageId) ?? new Set();
    this.#wakers.set(messageId, wakers);
    const wake = () => void reader.read().catch((e) => this.log('reply frames not read', e));
    wakers.add(wake);
    try {
      await this.sql`select pg_notify(${ATTACH}, ${messageId})`;
      while (!reader.finished && !signal.aborted) {
        await reader.read();
        if (reader.finished) break;
        // The owner may have died, or the reply ended before it could be mirrored.
        const row = await replyState(this.sql, messageId);
        if (!row) return 'ended';
        if (row.status !== 'streaming') return await lastFrames(reader, row.alive);
        if (!row.alive) return 'ended';
        // Asked again until the owner answers: the reply may not have started on it when first asked.
        if (!reader.snapshotSeen) await this.sql`select pg_notify(${ATTACH}, ${messageId})`;
        await pause(checkMs, signal, reader);
      }
      return reader.finished ? 'finished' : 'aborted';
    } finally {
      wakers.delete(wake);
      if (!wakers.size) this.#wakers.delete(messageId);
    }
  }

  /** Frames of replies that ended a while ago are no longer needed. */
  async sweep(): Promise<void> {
    const streaming = await streamingReplies(this.sql);
    await this.sql`
      delete from reply_frames where created_at < now() - interval '1 minute'
        and not (message_id = any(${streaming}::uuid[]))`;
  }
}

/**
 * A followed reply's frames read from `reply_frames` after the last one delivered: the snapshot first, then each
 * frame in order. One read at a time; one asked for meanwhile runs again after it.
 */
class FrameReader {
  last = 0;
  snapshotSeen = false;
  finished = false;
  /** Wakes the follower's wait early once the finish frame has been delivered. */
  nudge: (() => void) | undefined;
  #reading: Promise<void> | undefined;
  #again = false;

  constructor(
    private readonly sql: Sql,
    private readonly messageId: string,
    private readonly deliver: (f: Followed) => void,
  ) {}

  read(): Promise<void> {
    if (this.#reading) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = this.#readAll().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #readAll() {
    do {
      this.#again = false;
      const rows = await this.sql<{ seq: number; frame: Frame | SnapshotRow }[]>`
        select seq, frame from reply_frames where message_id = ${this.messageId} and seq > ${this.last}
        order by seq limit 1000`;
      for (const row of rows) this.#take(row);
      if (rows.length === 1000) this.#again = true;
    } while (this.#again && !this.finished);
  }

  #take(row: { seq: number; frame: Frame | SnapshotRow }) {
    if (!this.snapshotSeen) {
      // Frames before the snapshot do not exist; anything before it would be a mistake to deliver.
      if (row.frame.type !== 'snapshot') return;
      this.snapshotSeen = true;
      this.deliver({ snapshot: { start: row.frame.start, parts: row.frame.parts, seq: row.seq } });
    } else if (row.frame.type !== 'snapshot') {
      // A frame missing in between (its batch could not be written): never shown as if whole.
      if (row.seq !== this.last + 1) throw new Error(`frame ${this.last + 1} of the reply is missing`);
      this.deliver({ frame: row.frame, seq: row.seq });
      if (row.frame.type === 'finish') {
        this.finished = true;
        this.nudge?.();
      }
    }
    this.last = row.seq;
  }
}

/**
 * A reply written down as ended: its last frames may not have reached the table yet (a batch every few ms, the
 * finish after the claim is released), so a live writer's are waited for, briefly.
 */
async function lastFrames(reader: FrameReader, alive: boolean): Promise<'finished' | 'ended'> {
  for (let i = 0; i < 20 && alive && reader.snapshotSeen && !reader.finished; i++) {
    await reader.read();
    if (!reader.finished) await new Promise((r) => setTimeout(r, 100));
  }
  await reader.read();
  // Ended before anything was mirrored, or its last frames were not: the caller reads the stored row.
  return reader.finished ? 'finished' : 'ended';
}

/** Waits `ms`, or less: until the reader delivers the finish frame or `signal` aborts. */
function pause(ms: number, signal: AbortSignal, reader: FrameReader): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      reader.nudge = undefined;
      resolve();
    };
    const t = setTimeout(done, ms);
    reader.nudge = done;
    signal.addEventListener('abort', done);
  });
}
