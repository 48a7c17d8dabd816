/**
 * Who gets the next of an instance's slots (ADR 0057). Pure: no clock, no promises — `slots.ts` adds the time
 * limits and the waiting.
 *
 * - A Player holds at most `perPlayer` slots at once, and past its first only while `reserve` slots stay free
 *   for Players holding none: alone it uses `capacity − reserve`, and a newcomer finds a slot at once.
 * - A freed slot goes to the waiting Player who holds the fewest (round-robin between Players, first come
 *   first served on a tie), and within one Player to its oldest request.
 * - At most `queuePerPlayer` requests of one Player wait, and at most `queueTotal` in all (when set, for a pool
 *   whose keys anyone can mint: every waiter holds memory); past either the request is refused at once. A full
 *   line makes room for a Player with fewer waiting: the newest request of the Player with the most waiting (at
 *   least two more than the asker) is bumped out, so a few keys filling the line cannot shut everyone else out.
 */
export interface FairSlotsPolicy {
  capacity: number;
  perPlayer: number;
  reserve: number;
  queuePerPlayer: number;
  queueTotal?: number;
}

/** `full`: the Player's own line is full; `busy`: every line together is. */
export type Asked = 'granted' | 'queued' | 'full' | 'busy';

interface Waiter<T> {
  ticket: T;
  order: number;
}

export class FairSlotsCore<T> {
  readonly #held = new Map<string, number>();
  readonly #waiting = new Map<string, Waiter<T>[]>();
  #total = 0;
  #waitingTotal = 0;
  #order = 0;

  constructor(readonly policy: FairSlotsPolicy) {
    if (
      policy.capacity < 1 ||
      policy.perPlayer < 1 ||
      policy.reserve < 0 ||
      policy.reserve >= policy.capacity
    )
      throw new Error('A slot policy needs capacity ≥ 1, perPlayer ≥ 1 and 0 ≤ reserve < capacity.');
  }

  get total(): number {
    return this.#total;
  }

  heldBy(player: string): number {
    return this.#held.get(player) ?? 0;
  }

  waitingBy(player: string): number {
    return this.#waiting.get(player)?.length ?? 0;
  }

  /** Whether `player` may take a free slot now (regardless of who else waits). */
  mayTake(player: string): boolean {
    const free = this.policy.capacity - this.#total;
    const held = this.heldBy(player);
    return free > 0 && held < this.policy.perPlayer && (held === 0 || free - 1 >= this.policy.reserve);
  }

  /**
   * A request of `player`: granted now, queued behind others, or refused (its queue is full). Nobody who may
   * take a slot is ever left waiting (`#pump` hands them out), so a request that may take one goes first.
   */
  ask(player: string, ticket: T, bumped?: (player: string, ticket: T) => void): Asked {
    if (this.mayTake(player)) {
      this.#take(player);
      return 'granted';
    }
    const queue = this.#waiting.get(player) ?? [];
    if (queue.length >= this.policy.queuePerPlayer) return 'full';
    if (this.#waitingTotal >= (this.policy.queueTotal ?? Number.POSITIVE_INFINITY)) {
      const out = this.#bumpFor(queue.length);
      if (!out) return 'busy';
      bumped?.(out.player, out.ticket);
    }
    queue.push({ ticket, order: this.#order++ });
    this.#waiting.set(player, queue);
    this.#waitingTotal++;
    return 'queued';
  }

  /** A slot of `player` is given back; returns the waiting requests granted now, with their Players. */
  release(player: string): { player: string; ticket: T }[] {
    const held = this.heldBy(player);
    if (held <= 0) throw new Error(`${player} holds no slot to give back.`);
    if (held === 1) this.#held.delete(player);
    else this.#held.set(player, held - 1);
    this.#total--;
    return this.#pump();
  }

  /** A waiting request given up (its deadline passed, or its caller went away). False when it was not waiting. */
  cancel(player: string, ticket: T): boolean {
    const queue = this.#waiting.get(player);
    const at = queue?.findIndex((w) => w.ticket === ticket) ?? -1;
    if (!queue || at < 0) return false;
    queue.splice(at, 1);
    if (!queue.length) this.#waiting.delete(player);
    this.#waitingTotal--;
    return true;
  }

  /** The newest request of the Player with the most waiting, taken out, when it has at least `mine + 2`. */
  #bumpFor(mine: number): { player: string; ticket: T } | undefined {
    let most: [string, Waiter<T>[]] | undefined;
    for (const entry of this.#waiting) if (!most || entry[1].length > most[1].length) most = entry;
    if (!most || most[1].length < mine + 2) return undefined;
    const [player, queue] = most;
    const { ticket } = queue.pop()!;
    if (!queue.length) this.#waiting.delete(player);
    this.#waitingTotal--;
    return { player, ticket };
  }

  #take(player: string) {
    this.#held.set(player, this.heldBy(player) + 1);
    this.#total++;
  }

  #pump(): { player: string; ticket: T }[] {
    const granted: { player: string; ticket: T }[] = [];
    for (;;) {
      let best: { player: string; held: number; order: number } | undefined;
      for (const [player, queue] of this.#waiting) {
        if (!this.mayTake(player)) continue;
        const held = this.heldBy(player);
        const order = queue[0]!.order;
        if (!best || held < best.held || (held === best.held && order < best.order))
          best = { player, held, order };
      }
      if (!best) return granted;
      const queue = this.#waiting.get(best.player)!;
      const next = queue.shift()!;
      if (!queue.length) this.#waiting.delete(best.player);
      this.#waitingTotal--;
      this.#take(best.player);
      granted.push({ player: best.player, ticket: next.ticket });
    }
  }
}
