import type { Frame, Part, StartFrame } from '../parts/index.ts';

/** Why a reply is stopped when its server shuts down: it ends `interrupted`, not `stopped` (turn/run.ts). */
export const SHUTDOWN = 'shutdown';

/** A frame of one reply with its place in that reply's sequence (1, 2, …): what a viewer resumes after. */
export interface Numbered {
  seq: number;
  frame: Frame;
}

/** What a viewer attaching mid-reply starts from: the reply's Parts up to `seq`, then the frames after it. */
export interface Snapshot {
  start: StartFrame;
  parts: Part[];
  seq: number;
}

interface Live {
  start: StartFrame;
  parts: () => Part[];
  seq: number;
  stop: (reason?: string) => void;
  viewers: Set<(n: Numbered) => void>;
  /** Told when the reply leaves the hub, finished or not. */
  enders: Set<() => void>;
  /** Set while viewers on other instances follow this reply (see mirror.ts). */
  mirror?: (n: Numbered) => void;
}

/**
 * The replies this process is writing right now, so that any request on it can follow one (a second tab, a
 * reload) or stop it. In-process only: viewers on other instances are served through PostgreSQL (mirror.ts).
 * Costs the hot path one map lookup a frame while nobody else watches.
 */
export class ReplyHub {
  readonly #live = new Map<string, Live>();

  /** The reply has started (its start frame was sent); `parts` reads its Parts as they stand. */
  begin(start: StartFrame, parts: () => Part[], stop: (reason?: string) => void): void {
    this.#live.set(start.messageId, { start, parts, seq: 1, stop, viewers: new Set(), enders: new Set() });
  }

  /** A frame of a reply in flight: numbered and handed to whoever follows it. */
  publish(frame: Frame): void {
    // A reply's start frame is its `begin`.
    if (frame.type === 'start') return;
    const live = frame.messageId ? this.#live.get(frame.messageId) : undefined;
    if (!live) return;
    const seq = ++live.seq;
    // Numbered for followers only: with none (nearly always), a delta costs no object here.
    if (!live.viewers.size && !live.mirror) return;
    const n = { seq, frame };
    for (const viewer of live.viewers) viewer(n);
    live.mirror?.(n);
  }

  /** The reply has ended (its last frame was published): nobody can attach to it here any more. */
  end(messageId: string): void {
    const live = this.#live.get(messageId);
    this.#live.delete(messageId);
    for (const ended of live?.enders ?? []) ended();
  }

  /**
   * Follows a reply in flight on this process: its snapshot now, and every later frame to `viewer`, with
   * nothing missed or repeated between the two (both happen in one turn of the event loop). Undefined when the
   * reply is not being written here. Returns a function that stops following.
   */
  attach(
    messageId: string,
    viewer: (n: Numbered) => void,
    ended: () => void = () => {},
  ): { snapshot: Snapshot; detach: () => void } | undefined {
    const live = this.#live.get(messageId);
    if (!live) return undefined;
    live.viewers.add(viewer);
    live.enders.add(ended);
    return {
      snapshot: { start: live.start, parts: live.parts(), seq: live.seq },
      detach: () => {
        live.viewers.delete(viewer);
        live.enders.delete(ended);
      },
    };
  }

  /** Starts copying a reply's frames to `sink` (for other instances); returns its snapshot, or undefined. */
  mirror(messageId: string, sink: (n: Numbered) => void): Snapshot | undefined {
    const live = this.#live.get(messageId);
    if (!live) return undefined;
    live.mirror = sink;
    return { start: live.start, parts: live.parts(), seq: live.seq };
  }

  isMirrored(messageId: string): boolean {
    return Boolean(this.#live.get(messageId)?.mirror);
  }

  /** Stops a reply written here; false when it is not. */
  stop(messageId: string): boolean {
    const live = this.#live.get(messageId);
    if (!live) return false;
    live.stop();
    return true;
  }

  /**
   * At shutdown: ends every reply written here as interrupted (what arrived is stored) and waits, up to
   * `waitMs`, for them to be written down.
   */
  async stopAll(waitMs = 10_000): Promise<void> {
    const until = Date.now() + waitMs;
    do {
      // Again on every pass: a reply that started after the first pass is stopped too.
      for (const live of this.#live.values()) live.stop(SHUTDOWN);
      await new Promise((r) => setTimeout(r, 20));
    } while (this.#live.size && Date.now() < until);
  }
}
