import { AsyncLocalStorage } from 'node:async_hooks';
import { currentLeases, KeyedSlots, LeaseLostError, SlotWaitError } from '../db/index.ts';

/**
 * Calls to a Player's own servers (their PDS, their authorization server) are bounded per Player: a Player
 * whose servers answer slowly, or never, holds at most `atOnce` requests in flight on this instance, each cut
 * off at `timeoutMs`; the rest of that Player's requests wait their turn (first come, first served) for at most
 * `waitMs`. Other Players' calls never wait behind them. Issue 25, ADR 0054.
 *
 * The cap sits in one place: the fetch the OAuth client is given, through which every such request goes
 * (token refreshes, revocations, and every XRPC call of a Player's session). Which Player a request is for
 * comes from the async context: `asPlayer` around the session's calls (restore.ts) and around the OAuth
 * request lock, which is named after the Player (stores.ts).
 */
export interface PlayerCallLimits {
  /** Requests to one Player's servers in flight at once, per instance. */
  atOnce: number;
  /** The longest one request may take, its answer's body included. */
  timeoutMs: number;
  /** The longest a request waits for its turn among the same Player's. */
  waitMs: number;
}

export const PLAYER_CALL_LIMITS: PlayerCallLimits = { atOnce: 2, timeoutMs: 15_000, waitMs: 30_000 };

/** The most of one Player's requests that may wait at once; one more fails at once. */
const MAX_WAITING = 200;

const acting = new AsyncLocalStorage<string>();

/** Runs `fn` with every request the OAuth client makes within it counted as one of `did`'s. */
export function asPlayer<T>(did: string, fn: () => T): T {
  return acting.run(did, fn);
}

/** A Player's call waited past `waitMs` for its turn, or too many of theirs were waiting. */
export class PlayerCallsBusyError extends Error {}

const NULL_BODY = new Set([204, 205, 304]);

/** `inner`, with each request made for a Player under that Player's cap and time limit. */
export function playerCallFetch(
  inner: typeof globalThis.fetch,
  limits: PlayerCallLimits = PLAYER_CALL_LIMITS,
): typeof globalThis.fetch {
  const slots = new KeyedSlots(limits.atOnce, MAX_WAITING);
  return async (input, init) => {
    const did = acting.getStore();
    // Not for a Player (a sign-in's first requests, before anyone is known): the fetch's own limits hold.
    if (!did) return inner(input, init);
    const release = await slots.take(did, Date.now() + limits.waitMs).catch((e: unknown) => {
      throw e instanceof SlotWaitError
        ? new PlayerCallsBusyError(`too many calls to the servers of ${did} at once (${e.message})`)
        : e;
    });
    try {
      // The fence (ADR 0054): under a lease, nothing goes out unless the lease is certain to outlive the
      // request, so a holder that stalled past its term never spends a token or writes a record another
      // holder now owns.
      for (const lease of currentLeases())
        if (!lease.heldFor(limits.timeoutMs))
          throw new LeaseLostError(`lease ${lease.name} may have passed to someone else`);
      const signals = [AbortSignal.timeout(limits.timeoutMs)];
      if (init?.signal) signals.push(init.signal);
      if (input instanceof Request) signals.push(input.signal);
      const res = await inner(input, { ...init, signal: AbortSignal.any(signals) });
      // Read whole under the slot and the time limit: a body trickled slowly must not outlive either.
      const body = NULL_BODY.has(res.status) ? null : await res.arrayBuffer();
      const copy = new Response(body, {
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
      });
      Object.defineProperty(copy, 'url', { value: res.url });
      return copy;
    } finally {
      release();
    }
  };
}
