import type { Response } from 'express';

/**
 * Writes Server-Sent Events. Frames queued within one short window are sent in one socket write, so a
 * Provider streaming thousands of tiny deltas does not cost a syscall each (DESIGN: coalesce, don't pay I/O
 * per token). An optional `merge` joins a frame into the one queued before it (adjacent text deltas), so
 * they are serialised once too.
 */
export class SseWriter<F> {
  private queue: F[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly res: Response,
    private readonly merge: (prev: F, next: F) => F | undefined = () => undefined,
    private readonly windowMs = 16,
    private readonly maxFrames = 512,
  ) {}

  open(): void {
    this.res.status(200);
    this.res.set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
      Connection: 'keep-alive',
    });
    this.res.flushHeaders();
  }

  send(frame: F): void {
    if (this.closed) return;
    const last = this.queue.at(-1);
    const merged = last === undefined ? undefined : this.merge(last, frame);
    if (merged !== undefined) this.queue[this.queue.length - 1] = merged;
    else this.queue.push(frame);
    if (this.queue.length >= this.maxFrames) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.windowMs);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.queue.length && !this.closed && !this.res.writableEnded) {
      let out = '';
      for (const frame of this.queue) out += `data: ${JSON.stringify(frame)}\n\n`;
      this.res.write(out);
    }
    this.queue = [];
  }

  end(): void {
    this.flush();
    this.closed = true;
    if (!this.res.writableEnded) this.res.end();
  }
}
