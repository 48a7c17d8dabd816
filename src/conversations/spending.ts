import { playerNamed } from '../auth/index.ts';
import { type Fragment, LIVE_INSTANCES, LOCKS, type Queryable } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { storageFull, storageQuotaSql, storedSql } from '../storage/index.ts';

/** What one Player may spend (Village settings), checked before a turn reaches a Provider. */
export interface SpendingLimits {
  turnsPerMinute: number;
  concurrentStreams: number;
  playerDailyTokens: number;
  villageDailyTokens: number;
}

/**
 * The Village's slot (of `village_spend`'s 16 per day) that a Player's tokens are added to: always the same one
 * per Player, written after the Player's own `daily_spend` row (migration 053). A bitwise and,
 * not `abs(…) % 16`, since abs of the smallest int overflows.
 */
export const villageSlot = (q: Queryable, playerId: string | Fragment) =>
  q`(hashtext(${playerId}::text) & 15)::smallint`;

/** The Village's tokens today: the sum of its slots. */
export const villageToday = (q: Queryable) =>
  q`(select coalesce(sum(tokens), 0)::float8 from village_spend where day = (now() at time zone 'utc')::date)`;

/** What the Player (and the Village) have spent, as read under the Player's lock. */
export interface Spent {
  recent: number;
  wait: number;
  streams: number;
  mine: number;
  village: number;
  untilMidnight: number;
  /** Bytes the Player stores, and the most each Player may (ADR 0053). */
  stored: number;
  storageQuota: number;
}

/**
 * Takes the Player's spending lock for the rest of the transaction, without waiting for it: the statement
 * sent next on the connection runs only once the lock is held, so its snapshot sees every turn admitted
 * before it — one Player's turns sent at once are judged one after another. Await the result at the end.
 */
export function lockSpending(tx: Queryable, playerId: string): Promise<unknown> {
  const locked = tx`select pg_advisory_xact_lock(${LOCKS.spending}, hashtext(${playerId}))`.execute();
  locked.catch(() => {});
  return locked;
}

/**
 * True while this transaction holds the Player's spending lock (taken again, as a lock already held is); alone, outside
 * it, true only when no one else holds it. A claim sent behind its COMMIT in one round trip (`inOneTripAnswered`) is
 * conditioned on it: should postgres.js re-send the statement after the COMMIT, it still never runs beside another
 * claim of the same Player.
 */
export const holdsSpendingLock = (q: Queryable, playerId: string) =>
  q`pg_try_advisory_xact_lock(${LOCKS.spending}, hashtext(${playerId}))`;

/**
 * CTEs for a turn's statement: `spend` (one row, the figures `judgeSpending` reads) and `admitted` (a row
 * only when the turn is within every limit), so a claim can be conditioned on `admitted` in the same
 * statement.
 */
export const spendingCtes = (
  q: Queryable,
  playerId: string,
  conversationId: string,
  limits: SpendingLimits,
  /** Bytes the turn's own Message adds: the turn is admitted only while they leave room for a reply. */
  incomingBytes = 0,
) => q`
  today as (select date_trunc('day', now() at time zone 'utc') at time zone 'utc' as start),
  turns as (select at from turn_log where player_id = ${playerId} and at > now() - interval '1 minute'),
  spend as (select
    (select count(*)::int from turns) as recent,
    coalesce((select extract(epoch from min(at) + interval '1 minute' - now()) from turns), 0)::float8 as wait,
    (select count(*)::int from conversations where player_id = ${playerId} and id <> ${conversationId}
      and turn_owner is not null and turn_owner in (${q.unsafe(LIVE_INSTANCES)})) as streams,
    (select coalesce(sum(tokens), 0)::float8 from daily_spend
      where day = (now() at time zone 'utc')::date and player_id = ${playerId}) as mine,
    ${villageToday(q)} as village,
    (select extract(epoch from today.start + interval '1 day' - now()) from today)::float8 as "untilMidnight",
    ${storedSql(q, playerId)} + ${incomingBytes}::float8 as stored,
    ${storageQuotaSql(q)} as "storageQuota"),
  admitted as (select 1 from spend
    where streams < ${limits.concurrentStreams} and recent < ${limits.turnsPerMinute}
      and mine < ${limits.playerDailyTokens}::float8 and village < ${limits.villageDailyTokens}::float8
      and stored < "storageQuota")`;

/**
 * Refuses a turn the Player (or the Village) cannot afford now, with when to try again: the same judgement
 * as `admitted`, in the order the seed gives, so the refusal names the first limit reached.
 */
export function judgeSpending(u: Spent, limits: SpendingLimits): void {
  if (u.streams >= limits.concurrentStreams) {
    throw new AppError(
      'TOO_MANY_STREAMS',
      `You already have ${u.streams} replies on the way, the most at once. Wait for one to finish.`,
      { retryAfter: 5 },
    );
  }
  if (u.recent >= limits.turnsPerMinute) {
    throw new AppError(
      'RATE_LIMITED',
      `You sent ${limits.turnsPerMinute} Messages in the last minute, the most this Village allows. Try again shortly.`,
      { retryAfter: u.wait },
    );
  }
  if (u.mine >= limits.playerDailyTokens) {
    throw new AppError(
      'TOKEN_BUDGET',
      `You have used today's ${limits.playerDailyTokens.toLocaleString('en')} tokens. The budget renews at midnight UTC.`,
      { retryAfter: u.untilMidnight },
    );
  }
  if (u.village >= limits.villageDailyTokens) {
    throw new AppError(
      'VILLAGE_TOKEN_BUDGET',
      "The Village has used today's tokens. The budget renews at midnight UTC.",
      { retryAfter: u.untilMidnight },
    );
  }
  // A reply in progress always completes (its Provider output is never lost); a new turn needs room left.
  if (u.stored >= u.storageQuota) throw storageFull({ used: u.stored, quota: u.storageQuota });
}

/** Admitted: the turn is counted for the next minute (rows older than an hour are no use to anyone). */
export const logTurn = (q: Queryable, playerId: string) => q`
  gone as (delete from turn_log where player_id = ${playerId} and at < now() - interval '1 hour'),
  logged as (insert into turn_log (player_id) select ${playerId} from claimed)`;

/** What the Player and the Village have spent today, in tokens: read afresh before each Provider call. */
export async function todaysSpend(
  q: Queryable,
  playerId: string,
): Promise<{ mine: number; village: number }> {
  const [row] = await q<{ mine: number; village: number }[]>`
    select
      (select coalesce(sum(tokens), 0)::float8 from daily_spend
        where day = (now() at time zone 'utc')::date and player_id = ${playerId}) as mine,
      ${villageToday(q)} as village`;
  return row ?? { mine: 0, village: 0 };
}

/**
 * Whose budget a Provider call would go past, in words, or undefined while both have tokens left. Every call of
 * a turn asks (steps, hand-overs, summaries): a turn admitted at 1 token short ran 168 calls (issue 25).
 */
export function budgetSpent(
  u: { mine: number; village: number },
  limits: Pick<SpendingLimits, 'playerDailyTokens' | 'villageDailyTokens'>,
): string | undefined {
  if (u.mine >= limits.playerDailyTokens)
    return `You have used today's ${limits.playerDailyTokens.toLocaleString('en')} tokens, so the turn stops here; what arrived is kept. The budget renews at midnight UTC.`;
  if (u.village >= limits.villageDailyTokens)
    return "The Village has used today's tokens, so the turn stops here; what arrived is kept. The budget renews at midnight UTC.";
  return undefined;
}

/** One Player's tokens spent today and this month (UTC), for the admins. */
export interface PlayerSpending {
  did: string;
  handle: string | null;
  today: number;
  month: number;
}

/**
 * Every Player who spent this month, biggest spender first (at most `limit`), from `daily_spend`: one row per
 * Player and day, so a month is at most 31 rows each. Each is named by auth's `playerNamed`, in the same statement.
 */
export function spendingByPlayer(sql: Queryable, limit = 200) {
  return sql<PlayerSpending[]>`
    with days as (select (now() at time zone 'utc')::date as today),
    spent as (
      select d.player_id,
        coalesce(sum(d.tokens) filter (where d.day = days.today), 0)::float8 as today,
        coalesce(sum(d.tokens), 0)::float8 as month
      from daily_spend d cross join days
      where d.day >= date_trunc('month', days.today)::date
      group by d.player_id)
    select p.did, p.handle, s.today, s.month
    from spent s cross join lateral (${playerNamed(sql, sql`s.player_id`)}) p
    order by s.month desc, p.did limit ${limit}`;
}
