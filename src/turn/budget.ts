import { budgetSpent, chargeTokens, todaysSpend } from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import type { VillageSettings } from '../village/index.ts';

/** Why a turn stopped before a Provider call: the Player's or the Village's day is spent. */
export interface BudgetSpent {
  code: 'BUDGET_SPENT';
  message: string;
}

/**
 * The daily budgets, asked before every Provider call of a turn (each step of a tool loop, each hand-over, each
 * rolling-summary call), not only when the turn starts; each step is charged as it ends, so the Player's other
 * turns running at the same time see it too (ADR 0050).
 */
export class TurnBudget {
  constructor(
    private readonly sql: Sql,
    private readonly playerId: string,
    private readonly settings: Pick<VillageSettings, 'playerDailyTokens' | 'villageDailyTokens'>,
    /** Totals just read (by the claim): the first ask uses them instead of a read; later asks read afresh. */
    private known?: { mine: number; village: number },
  ) {}

  /** Undefined while the Player and the Village have tokens left today; else why the turn stops. */
  async spent(): Promise<BudgetSpent | undefined> {
    const known = this.known;
    this.known = undefined;
    return this.judge(known ?? (await todaysSpend(this.sql, this.playerId)));
  }

  /**
   * Adds what a finished step took to the Player's and the Village's day, and says whether the next call may go
   * (from the totals the charge returns: no second read).
   */
  async charge(tokens: number): Promise<BudgetSpent | undefined> {
    this.known = undefined;
    const totals = await chargeTokens(this.sql, this.playerId, tokens);
    return totals ? this.judge(totals) : this.spent();
  }

  private judge(totals: { mine: number; village: number }): BudgetSpent | undefined {
    const message = budgetSpent(totals, this.settings);
    return message === undefined ? undefined : { code: 'BUDGET_SPENT', message };
  }
}
