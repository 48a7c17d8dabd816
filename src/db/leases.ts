import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Sql } from './client.ts';
import { KeyedSlots, SlotWaitError } from './slots.ts';

/** The lease was not had within the wait: someone else still holds it. Callers turn it into their own error. */
export class LeaseBusyError extends Error {}

/** The lease was taken over (or could not be renewed for a whole term) while its holder still worked. */
export class LeaseLostError extends Error {}

export interface LeaseTerms {
  /** How long the lease lives unless renewed; while `fn` runs it is renewed every third of this. */
  ttlMs: number;
  /** The longest wait for it, in line in this process and then for the row, before LeaseBusyError. */
  waitMs: number;
}

/** A lease being held: what its holder can ask while it works. */
export interface Lease {
  readonly name: string;
  /** Aborts once the lease is known lost. */
  readonly signal: AbortSignal;
  /**
   * Whether the lease is certain to stay this holder's for `ms` more even if no renewal gets through: the last
   * confirmed term, counted from when its statement was sent, has at least that much left. The fence before
   * anything irreversible elsewhere (a token spent, a record written): see ADR 0054.
   */
  heldFor(ms: number): boolean;
}

const holding = new AsyncLocalStorage<readonly Lease[]>();

/** Every lease the current async context runs under, innermost last (none outside `Leases.hold`). */
export function currentLeases(): readonly Lease[] {
  return holding.getStore() ?? [];
}

/** Where a release is announced, with the lease's name as payload: waiters wake at once instead of polling. */
const CHANNEL = 'lease_released';
const FIRST_POLL_MS = 25;

/**
 * Time-bounded leases in PostgreSQL (ADR 0054), for locks held while someone else's server is waited on. Unlike
 * an advisory lock, neither the holder nor a waiter keeps a connection: taking, renewing and releasing are one
 * short statement each on the main pool, and waiting is a timer plus one shared LISTEN (on the connection
 * postgres.js keeps for every listener of this pool, not a pool slot). A holder that dies stops renewing, and
 * its lease expires after `ttlMs`; the next waiter takes it over.
 *
 * In this process one caller per name waits for the row; the others wait in line in memory, first come first
 * served, under the same deadline.
 */
export class Leases {
  readonly #line = new KeyedSlots(1);
  readonly #wakers = new Map<string, Set<() => void>>();
  #listening: Promise<unknown> | undefined;
  #unlisten: (() => Promise<unknown>) | undefined;

  constructor(
    readonly sql: Sql,
    /** The longest pause between two tries when no release is heard (an expiry is not announced). */
    readonly maxPollMs = 1000,
  ) {}

  /**
   * Runs `fn` holding the lease `name`, and with it in `currentLeases()` for everything `fn` starts. The lease's
   * signal aborts if it is lost while `fn` runs (taken over after its holder could not renew it for a whole
   * term): `fn` should stop before its next outside write.
   */
  async hold<T>(name: string, terms: LeaseTerms, fn: (lease: Lease) => Promise<T>): Promise<T> {
    const deadline = Date.now() + terms.waitMs;
    const leave = await this.#line.take(name, deadline).catch((e: unknown) => {
      throw e instanceof SlotWaitError ? new LeaseBusyError(`lease ${name} is busy`) : e;
    });
    try {
      const { holder, sent } = await this.#take(name, terms.ttlMs, deadline);
      return await this.#run(name, holder, sent, terms.ttlMs, fn);
    } finally {
      leave();
    }
  }

  /** How many callers in this process wait in line for `name` behind the one holding or taking it. */
  waiting(name: string): number {
    return this.#line.count(name).waiting;
  }

  /** Stops listening (the pool's own `end` does too). */
  async close(): Promise<void> {
    await this.#unlisten?.().catch(() => {});
  }

  async #take(name: string, ttlMs: number, deadline: number): Promise<{ holder: string; sent: number }> {
    await this.#listen();
    const holder = randomUUID();
    let pause = FIRST_POLL_MS;
    for (;;) {
      // Listening before trying: a release between the try and the wait still wakes this waiter.
      const released = this.#released(name);
      try {
        const sent = Date.now();
        const [taken] = await this.sql`
          insert into leases (name, holder, expires_at)
          values (${name}, ${holder}, now() + make_interval(secs => ${ttlMs / 1000}))
          on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at
            where leases.expires_at <= now()
          returning holder`;
        if (taken) return { holder, sent };
        const left = deadline - Date.now();
        if (left <= 0) throw new LeaseBusyError(`lease ${name} is busy`);
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          released.heard,
          new Promise((r) => {
            timer = setTimeout(r, Math.min(pause, left));
          }),
        ]);
        clearTimeout(timer);
      } finally {
        released.stop();
      }
      pause = Math.min(pause * 2, this.maxPollMs);
    }
  }

  async #run<T>(
    name: string,
    holder: string,
    takenAt: number,
    ttlMs: number,
    fn: (lease: Lease) => Promise<T>,
  ) {
    const lost = new AbortController();
    // Counted from when a statement was sent, never from when it came back: the database's expiry is later.
    let renewedAt = takenAt;
    const lease: Lease = {
      name,
      signal: lost.signal,
      heldFor: (ms) => !lost.signal.aborted && renewedAt + ttlMs - Date.now() >= ms,
    };
    let renewing = false;
    const beat = setInterval(() => {
      if (renewing) return;
      renewing = true;
      const sent = Date.now();
      this.sql`update leases set expires_at = now() + make_interval(secs => ${ttlMs / 1000})
        where name = ${name} and holder = ${holder} returning 1`
        .then(
          (rows) => {
            if (rows.length) renewedAt = sent;
            else lost.abort(new LeaseLostError(`lease ${name} was taken over`));
          },
          () => {
            // The database is out of reach: past a whole term the lease may have gone to someone else.
            if (Date.now() - renewedAt >= ttlMs)
              lost.abort(new LeaseLostError(`lease ${name} could not be renewed`));
          },
        )
        .finally(() => {
          renewing = false;
        });
    }, ttlMs / 3);
    try {
      return await holding.run([...currentLeases(), lease], () => fn(lease));
    } finally {
      clearInterval(beat);
      // One statement: gone, and said to whoever waits. A failed release only means the lease expires.
      await this.sql`
        with gone as (delete from leases where name = ${name} and holder = ${holder} returning name)
        select pg_notify(${CHANNEL}, name) from gone`.catch(() => {});
    }
  }

  #listen(): Promise<unknown> {
    this.#listening ??= this.sql
      .listen(CHANNEL, (name) => {
        for (const wake of this.#wakers.get(name) ?? []) wake();
      })
      .then(
        (l) => {
          this.#unlisten = l.unlisten;
        },
        // Without the listener, waiters still poll: slower to notice a release, never wrong.
        () => {},
      );
    return this.#listening;
  }

  #released(name: string): { heard: Promise<void>; stop(): void } {
    let wake!: () => void;
    const heard = new Promise<void>((r) => {
      wake = r;
    });
    let set = this.#wakers.get(name);
    if (!set) {
      set = new Set();
      this.#wakers.set(name, set);
    }
    set.add(wake);
    const held = set;
    return {
      heard,
      stop: () => {
        held.delete(wake);
        if (!held.size && this.#wakers.get(name) === held) this.#wakers.delete(name);
      },
    };
  }
}
