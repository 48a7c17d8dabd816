import { AppError } from '../http/index.ts';
import { FairSlotsCore, type FairSlotsPolicy } from './core.ts';

export interface FairSlotsOptions extends FairSlotsPolicy {
  /** Longest a request waits for a slot; past it, 503 BUSY. */
  waitMs: number;
  /** Longest a slot is held: then its signal aborts and the slot goes to the next. */
  holdMs: number;
  /** Sentences for people: one Player's queue is full (429), and the wait ran out or every queue is full (503). */
  messages: { queueFull: string; busy: string };
  /**
   * The status of a full queue: 429 where the key is the caller (a Player who has enough waiting), 503 where it is
   * not (a thread's author, for an anonymous reader who exceeded nothing).
   */
  queueFullStatus?: 429 | 503;
}

/** A slot held: the work honours `signal` (aborted at the slot's deadline); `release` is safe to call twice. */
export interface Slot {
  readonly signal: AbortSignal;
  release(): void;
}

/** Why a slot's signal aborted: its deadline passed. */
export class SlotDeadlineError extends Error {
  constructor(readonly holdMs: number) {
    super(`The work ran longer than its ${Math.round(holdMs / 1000)} s and was stopped.`);
  }
}

interface Ticket {
  grant: () => void;
  /** Bumped out of a full line by a Player with fewer waiting: refused as busy. */
  bump: () => void;
}

/**
 * One of the instance's pools of slots (imports, exports, page conversions, sandbox commands), handed out
 * fairly between Players (`core.ts`), every wait and every hold bounded in time.
 */
export class FairSlots {
  readonly #core: FairSlotsCore<Ticket>;

  constructor(readonly options: FairSlotsOptions) {
    this.#core = new FairSlotsCore(options);
  }

  /** Slots held now in all, and by one Player; one Player's requests waiting (for tests and the bench). */
  get held(): number {
    return this.#core.total;
  }
  heldBy(player: string): number {
    return this.#core.heldBy(player);
  }
  waitingBy(player: string): number {
    return this.#core.waitingBy(player);
  }

  /**
   * A slot for `player`, when one is free for it. Refused with BUSY at once when the Player already has its
   * queue's worth waiting (429, or `queueFullStatus`) or every queue together is full (`queueTotal`, 503) and
   * nobody has two more waiting than it (else that one's newest is refused, 503, and this one waits), and with
   * 503 BUSY when none came within `waitMs`; `signal` (the caller went away) gives up the wait with its reason.
   * `holdMs` overrides the pool's deadline for this slot.
   */
  acquire(player: string, { signal, holdMs }: { signal?: AbortSignal; holdMs?: number } = {}): Promise<Slot> {
    signal?.throwIfAborted();
    return new Promise<Slot>((resolve, reject) => {
      const busy = () => new AppError('BUSY', this.options.messages.busy, { retryAfter: 5, status: 503 });
      const ticket: Ticket = {
        grant: () => {
          clearTimeout(waitTimer);
          signal?.removeEventListener('abort', onAbort);
          resolve(this.#held(player, holdMs ?? this.options.holdMs));
        },
        bump: () => {
          clearTimeout(waitTimer);
          signal?.removeEventListener('abort', onAbort);
          reject(busy());
        },
      };
      const giveUp = (error: unknown) => {
        if (!this.#core.cancel(player, ticket)) return;
        clearTimeout(waitTimer);
        signal?.removeEventListener('abort', onAbort);
        reject(error);
      };
      const onAbort = () => giveUp(signal?.reason);
      let waitTimer: NodeJS.Timeout | undefined;
      const asked = this.#core.ask(player, ticket, (_bumped, other) => other.bump());
      if (asked === 'granted') return ticket.grant();
      if (asked === 'full') {
        const status = this.options.queueFullStatus ?? 429;
        return reject(new AppError('BUSY', this.options.messages.queueFull, { retryAfter: 5, status }));
      }
      if (asked === 'busy') return reject(busy());
      waitTimer = setTimeout(() => giveUp(busy()), this.options.waitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Runs `work` in a slot of `player`'s, with the slot's signal (its deadline, and `signal`'s abort). */
  async run<T>(
    player: string,
    work: (signal: AbortSignal) => Promise<T>,
    options: { signal?: AbortSignal; holdMs?: number } = {},
  ): Promise<T> {
    const slot = await this.acquire(player, options);
    try {
      return await work(options.signal ? AbortSignal.any([slot.signal, options.signal]) : slot.signal);
    } finally {
      slot.release();
    }
  }

  #held(player: string, holdMs: number): Slot {
    const control = new AbortController();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      clearTimeout(deadline);
      for (const next of this.#core.release(player)) next.ticket.grant();
    };
    // At the deadline the slot is given back whatever the work does: no slot is held for ever.
    const deadline = setTimeout(() => {
      control.abort(new SlotDeadlineError(holdMs));
      release();
    }, holdMs);
    return { signal: control.signal, release };
  }
}
