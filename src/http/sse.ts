import type { Response } from 'express';

/**
 * Writes Server-Sent Events. Frames queued within one short window are sent in one socket write, so a
 * Provider streaming thousands of tiny deltas does not cost a syscall each (DESIGN: coalesce, don't pay I/O
 * per token).
 */
export class SseWriter {
  private buffer = '';
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly res: Response,
    private readonly windowMs = 16,
    private readonly maxBytes = 8192,
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

  send(frame: unknown): void {
    if (this.closed) return;
    this.buffer += `data: ${JSON.stringify(frame)}\n\n`;
    if (this.buffer.length >= this.maxBytes) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.windowMs);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buffer && !this.closed && !this.res.writableEnded) this.res.write(this.buffer);
    this.buffer = '';
  }

  end(): void {
    this.flush();
    this.closed = true;
    if (!this.res.writableEnded) this.res.end();
  }
}
