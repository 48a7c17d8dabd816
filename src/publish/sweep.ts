/**
 * Background work that waits on Players' own PDSes (live appends, retries): every `everyMs` each server takes what
 * is due, one item per Player at a time and at most `atOnce` at once, so a slow or hostile PDS holds up only its
 * own Player's work, never another's. `take` is told the Players already running here and takes one item (by a
 * statement that makes one server take each); `run` does it.
 */
export function startSweep<T extends { playerId: string }>(o: {
  everyMs: number;
  atOnce: number;
  take: (busy: readonly string[]) => Promise<T | undefined>;
  run: (due: T) => Promise<void>;
  log: (message: string, error?: unknown) => void;
  /** What is swept, for the log. */
  what: string;
}): () => void {
  const running = new Set<string>();
  let taking = false;
  const timer = setInterval(() => {
    if (taking) return;
    taking = true;
    (async () => {
      while (running.size < o.atOnce) {
        const due = await o.take([...running]);
        if (!due) break;
        running.add(due.playerId);
        void o
          .run(due)
          .catch((e) => o.log(`${o.what} failed`, e))
          .finally(() => running.delete(due.playerId));
      }
    })()
      .catch((e) => o.log(`${o.what} sweep failed`, e))
      .finally(() => {
        taking = false;
      });
  }, o.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
