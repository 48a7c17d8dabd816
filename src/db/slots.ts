/** A wait for a slot ran past its deadline, or too many were already waiting. */
export class SlotWaitError extends Error {}

interface Waiter {
  give(release: () => void): void;
  timer: NodeJS.Timeout;
}

interface Line {
  running: number;
  waiting: Waiter[];
}

/**
 * In-process slots per key, handed out first come, first served: at most `perKey` holders of one key at once,
 * the others wait in line until their deadline. A key with nobody holding or waiting leaves the map, so the
 * map is as large as what is in flight. Used for the in-process line in front of a lease (one waiter per name)
 * and for the per-Player cap on calls to a Player's own servers.
 */
export class KeyedSlots {
  readonly #lines = new Map<string, Line>();

  constructor(
    readonly perKey: number,
    /** The most that may wait for one key; one more is refused at once (a bound on memory and on waits). */
    readonly maxWaiting = 1000,
  ) {}

  /** Resolves with this slot's release (safe to call twice), or rejects with SlotWaitError at `deadline`. */
  take(key: string, deadline: number): Promise<() => void> {
    let line = this.#lines.get(key);
    if (!line) {
      line = { running: 0, waiting: [] };
      this.#lines.set(key, line);
    }
    if (line.running < this.perKey) {
      line.running++;
      return Promise.resolve(this.#release(key, line));
    }
    if (line.waiting.length >= this.maxWaiting)
      return Promise.reject(new SlotWaitError(`${line.waiting.length} already waiting`));
    const held = line;
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        give: resolve,
        timer: setTimeout(
          () => {
            held.waiting.splice(held.waiting.indexOf(waiter), 1);
            this.#drop(key, held);
            reject(new SlotWaitError('waited past the deadline'));
          },
          Math.max(0, deadline - Date.now()),
        ),
      };
      held.waiting.push(waiter);
    });
  }

  /** How many hold a slot of `key` and how many wait (for tests and logs). */
  count(key: string): { running: number; waiting: number } {
    const line = this.#lines.get(key);
    return { running: line?.running ?? 0, waiting: line?.waiting.length ?? 0 };
  }

  #release(key: string, line: Line): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = line.waiting.shift();
      if (next) {
        // The slot passes straight to the next in line: nobody arriving meanwhile can take it first.
        clearTimeout(next.timer);
        next.give(this.#release(key, line));
      } else {
        line.running--;
        this.#drop(key, line);
      }
    };
  }

  #drop(key: string, line: Line) {
    if (line.running === 0 && line.waiting.length === 0 && this.#lines.get(key) === line)
      this.#lines.delete(key);
  }
}
