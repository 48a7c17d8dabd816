/**
 * Writes every streaming reply of this process to its row at most once per interval, all of them in one
 * statement per tick, and only those that changed: a 2,000-delta reply costs a handful of writes, 200 replies
 * at once cost one statement a tick instead of 200 (which queued behind each other and ran late), and a
 * killed process loses at most about one interval. One write at a time: while one is in flight, changes wait
 * (merged, latest value per reply) for the next tick, so a slow database never builds a queue of batches.
 */
export class CheckpointBatch<T> {
  private dirty = new Map<string, T>();
  private timer: NodeJS.Timeout | undefined;
  private inFlight: { ids: Set<string>; done: Promise<void> } | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly write: (rows: { id: string; value: T }[]) => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  update(id: string, value: T): void {
    this.dirty.set(id, value);
    this.schedule();
  }

  private schedule(): void {
    if (this.dirty.size) this.timer ??= setTimeout(() => this.tick(), this.intervalMs);
  }

  private tick(): void {
    this.timer = undefined;
    if (this.inFlight || !this.dirty.size) return;
    const rows = [...this.dirty].map(([id, value]) => ({ id, value }));
    this.dirty.clear();
    const done = this.write(rows)
      .catch(this.onError)
      .finally(() => {
        this.inFlight = undefined;
        this.schedule();
      });
    this.inFlight = { ids: new Set(rows.map((r) => r.id)), done };
  }

  /**
   * The reply `id` is ending: its pending value is dropped (the final write supersedes it), and a write in
   * flight that holds an older one is awaited, so no checkpoint lands after the final write.
   */
  async settle(id: string): Promise<void> {
    this.dirty.delete(id);
    const flight = this.inFlight;
    if (flight?.ids.has(id)) await flight.done;
  }
}
