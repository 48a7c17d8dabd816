import type { Options, Store } from 'express-rate-limit';
import type { Sql } from '../db/index.ts';

/**
 * express-rate-limit's counter kept in PostgreSQL (`rate_limits`): every server instance counts against one
 * limit. One statement a request: the key's window starts again once it has ended, else its hits go up. Rows of
 * ended windows are swept now and then.
 */
export class PgRateStore implements Store {
  readonly localKeys = false;
  private windowMs = 60_000;
  private sinceSweep = 0;

  constructor(
    private readonly sql: Sql,
    /** Which limiter (one table holds them all). */
    readonly prefix: string,
  ) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  async increment(key: string) {
    if (++this.sinceSweep >= SWEEP_EVERY) {
      this.sinceSweep = 0;
      void this.sql`delete from rate_limits where reset_at < now() - interval '1 minute'`.catch(() => {});
    }
    const [row] = await this.sql<{ hits: number; resetAt: Date }[]>`
      insert into rate_limits (key, hits, reset_at)
      values (${`${this.prefix}:${key}`}, 1, now() + make_interval(secs => ${this.windowMs / 1000}))
      on conflict (key) do update set
        hits = case when rate_limits.reset_at <= now() then 1 else rate_limits.hits + 1 end,
        reset_at = case when rate_limits.reset_at <= now() then excluded.reset_at else rate_limits.reset_at end
      returning hits, reset_at as "resetAt"`;
    return { totalHits: row!.hits, resetTime: row!.resetAt };
  }

  async decrement(key: string): Promise<void> {
    await this
      .sql`update rate_limits set hits = greatest(hits - 1, 0) where key = ${`${this.prefix}:${key}`}`;
  }

  async resetKey(key: string): Promise<void> {
    await this.sql`delete from rate_limits where key = ${`${this.prefix}:${key}`}`;
  }
}

const SWEEP_EVERY = 1000;
