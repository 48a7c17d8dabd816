import { endUndecided } from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';

/**
 * Waits before each ask, in ms: the database was out of reach (a restart, a failover) when the turn looked it up,
 * and comes back within seconds to minutes. About twelve minutes in all; past that the claim, if it was stored, waits
 * for this instance's restart (markInterrupted), as every claim did before ADR 0099.
 */
export const UNDECIDED_WAITS_MS = [1_000, 2_000, 4_000, 8_000, 15_000, 30_000, ...Array(20).fill(30_000)];

/**
 * A turn whose claim's COMMIT went unanswered and could not be looked up (ADR 0099, ADR 0101): the Player was told
 * their Message may not have been saved. If it was, the Conversation stays claimed by this instance with its reply
 * row streaming and no turn behind them, and no Message could be sent in it. So it is asked again, in the
 * background, until the database answers: then the reply is ended and the claim released (`endUndecided`), and the
 * turn's end told (`ended`). Timers do not hold the process open; a stopping server's pool ends the asking.
 */
export async function settleUndecided(
  deps: { sql: Sql; instanceId: number; log: (message: string, error?: unknown) => void },
  turn: { conversationId: string; messageId: string },
  ended: (conversationId: string) => Promise<void>,
  waits: readonly number[] = UNDECIDED_WAITS_MS,
): Promise<'released' | 'ended' | 'nothing' | 'gave up'> {
  let last: unknown;
  for (const wait of waits) {
    await new Promise((r) => setTimeout(r, wait).unref());
    let settled: { stored: boolean; ended: boolean; released: boolean };
    try {
      settled = await endUndecided(deps.sql, { ...turn, instanceId: deps.instanceId });
    } catch (e) {
      last = e;
      if ((e as { code?: unknown } | null)?.code === 'CONNECTION_ENDED') break;
      continue;
    }
    if (!settled.stored) return 'nothing';
    deps.log(
      settled.released
        ? 'an undecided turn claim had been stored: its reply is ended and its Conversation released'
        : 'an undecided turn claim had been stored: its reply is ended; its Conversation has moved on',
    );
    // Its reply came onto the path as interrupted, as markInterrupted's do: the turn's end is told (again, if a
    // sweep marked it first: the notice only dates the next append).
    await ended(turn.conversationId).catch((e) => deps.log('turn end not told', e));
    return settled.released ? 'released' : 'ended';
  }
  deps.log('an undecided turn claim could not be settled', last);
  return 'gave up';
}
