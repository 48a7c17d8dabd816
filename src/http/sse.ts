import type { Response } from 'express';

/**
 * Writes Server-Sent Events, coalescing only under pressure (DESIGN: don't pay I/O per token, and don't make
 * the reader wait either). A frame sent while the socket is idle is written when the current chain of
 * microtasks ends, with whatever else was sent meanwhile. While Node still holds bytes the socket has not taken,
 * frames queue and go out together when the event loop comes round; once a write returned false (backed up),
 * together on 'drain'. An optional `merge` joins a frame into the one queued before it (adjacent text deltas),
 * so they are serialised once too.
 */
export class SseWriter<F> {
  private queue: F[] = [];
  private scheduled = false;
  private draining = false;
  private closed = false;

  constructor(
    private readonly res: Response,
    private readonly merge: (prev: F, next: F) => F | undefined = () => undefined,
    /** A reader that takes nothing for this long is gone: its connection is closed (its socket, memory). */
    private readonly stalledMs = 60_000,
  ) {}

  open(): void {
    this.res.status(200);
    this.res.set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
      Connection: 'keep-alive',
    });
    // The headers go out with the first frame, in one write: a turn sends its start frame in this same tick, and a
    // write of its own for the headers was one more system call per turn (and one more read for the client). A
    // stream whose first frame is further off still shows its 200 at once, from the next turn of the loop.
    setImmediate(() => {
      if (!this.res.headersSent && !this.res.writableEnded && !this.res.destroyed) this.res.flushHeaders();
    });
  }

  send(frame: F): void {
    if (this.closed) return;
    const last = this.queue.at(-1);
    const merged = last === undefined ? undefined : this.merge(last, frame);
    if (merged !== undefined) this.queue[this.queue.length - 1] = merged;
    else this.queue.push(frame);
    if (this.draining || this.scheduled) return;
    this.scheduled = true;
    // Idle (the socket took everything written so far): written when this chain of microtasks ends, as a write
    // now would leave then too (Node corks a response's write until the next tick). Frames sent meanwhile, the
    // other deltas of one Provider chunk, merge into it: one frame, one system call. Not deferred to the loop's
    // next turn: under load that turn is a long chain of other streams' work. Bytes still unsent: what arrives
    // merges until the loop comes round.
    if (this.res.writableLength === 0) process.nextTick(this.scheduledFlush);
    else setImmediate(this.scheduledFlush);
  }

  private readonly scheduledFlush = () => {
    this.scheduled = false;
    this.flush();
  };

  /** Writes what is queued, unless the socket is still draining (then 'drain' writes it). */
  flush(): void {
    if (this.draining || !this.queue.length || this.closed || this.res.writableEnded) return;
    const out = this.serialise();
    if (!this.res.write(out)) {
      this.draining = true;
      const stalled = this.stalledTimer();
      this.res.once('drain', () => {
        clearTimeout(stalled);
        this.draining = false;
        this.flush();
      });
    }
  }

  private stalledTimer(): NodeJS.Timeout {
    const timer = setTimeout(() => this.res.destroy(), this.stalledMs);
    timer.unref();
    return timer;
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    // Whatever is queued goes with the end, drained or not: Node buffers it, and nothing may be dropped.
    if (!this.res.writableEnded) this.res.end(this.queue.length ? this.serialise() : undefined);
    // What Node still holds for a reader that stopped reading is dropped with its connection in the end.
    if (this.res.writableLength > 0) {
      const stalled = this.stalledTimer();
      this.res.once('finish', () => clearTimeout(stalled));
      this.res.once('close', () => clearTimeout(stalled));
    }
  }

  private serialise(): string {
    let out = '';
    for (const frame of this.queue) out += `data: ${JSON.stringify(frame)}\n\n`;
    this.queue = [];
    return out;
  }
}
