/**
 * Writes a streaming reply to its row at most once per interval, and only when something changed, so a
 * 2,000-delta reply costs a handful of writes and a killed process loses at most one interval.
 * Writes never overlap; `stop()` waits for the one in flight.
 */
export class Checkpointer<T> {
  private latest: T | undefined;
  private dirty = false;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> = Promise.resolve();

  constructor(
    private readonly intervalMs: number,
    private readonly write: (value: T) => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  update(value: T): void {
    this.latest = value;
    this.dirty = true;
    this.timer ??= setTimeout(() => this.tick(), this.intervalMs);
  }

  private tick(): void {
    this.timer = undefined;
    if (!this.dirty || this.latest === undefined) return;
    const value = this.latest;
    this.dirty = false;
    this.inFlight = this.inFlight.then(() => this.write(value)).catch(this.onError);
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }
}
