import type { Part } from '../parts/index.ts';

/** How far one reply may go: characters of Parts (text, reasoning, tool inputs and outputs), Parts, and time. */
export interface ReplyLimits {
  maxChars: number;
  maxMs: number;
  /** Parts: each delta that starts a new one (text after reasoning, say) costs the fold a copy of all of them. */
  maxParts?: number;
}

// A million characters is over 200,000 tokens, past what any Model writes in one reply; a quarter of an hour
// covers eight tool rounds of the slowest tools. A reply past either is a Model looping or a Provider trickling.
// Five thousand Parts is past any reply's steps and calls; a Provider alternating one-character reasoning and text
// would otherwise make a million of them, each delta copying all before it (minutes of a core).
export const DEFAULT_REPLY_LIMITS: ReplyLimits = { maxChars: 1_000_000, maxMs: 15 * 60_000, maxParts: 5000 };

export interface LimitReached {
  code: 'REPLY_TOO_LONG' | 'REPLY_TIME_LIMIT' | 'PROVIDER_TIMEOUT';
  message: string;
}

/**
 * The bounds of one reply. Its signal aborts the Provider call (and any tool running) once the reply has grown
 * past `maxChars` or run past `maxMs`; `reached` then says which, in words for the Player. What arrived before is
 * kept, as on Stop.
 */
/** A Provider silent for `ms` between chunks, as the reply says it: the SDK's clock (with tools) or ours. */
export const providerQuiet = (ms: number): LimitReached => ({
  code: 'PROVIDER_TIMEOUT',
  message: `The Provider sent nothing for ${Math.round(ms / 1000)} s, so the reply was ended.`,
});

export class ReplyBounds {
  readonly signal: AbortSignal;
  reached: LimitReached | undefined;
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  /** The quiet-time watch (`heard`): one timer re-armed about once per quiet time, not one per chunk. */
  private quietTimer: NodeJS.Timeout | undefined;
  private lastHeard = 0;
  private quietMs: number | undefined;

  constructor(private readonly limits: ReplyLimits) {
    this.signal = this.controller.signal;
    const minutes = Math.round(limits.maxMs / 60_000);
    const span = minutes >= 1 ? `${minutes} minute(s)` : `${Math.round(limits.maxMs / 1000)} s`;
    this.timer = setTimeout(
      () =>
        this.end({
          code: 'REPLY_TIME_LIMIT',
          message: `The reply ran for ${span}, the longest a reply may run here, so it was ended. What arrived is kept.`,
        }),
      limits.maxMs,
    );
    this.timer.unref();
  }

  /**
   * The reply has grown to `chars` characters (its deltas' text, its tool calls' inputs and outputs: `charsOf`)
   * in `parts` Parts.
   */
  grown(chars: number, parts: number): void {
    const maxParts = this.limits.maxParts ?? DEFAULT_REPLY_LIMITS.maxParts!;
    if (chars > this.limits.maxChars)
      this.end({
        code: 'REPLY_TOO_LONG',
        message: `The reply grew past ${this.limits.maxChars.toLocaleString('en')} characters, the most one reply may hold here, so it was ended. What arrived is kept.`,
      });
    else if (parts > maxParts)
      this.end({
        code: 'REPLY_TOO_LONG',
        message: `The reply grew past ${maxParts.toLocaleString('en')} parts, the most one reply may hold here, so it was ended. What arrived is kept.`,
      });
  }

  /**
   * From now on, the Provider falling quiet for `ms` between chunks ends the reply (PROVIDER_TIMEOUT). In place
   * of the AI SDK's `chunkMs`, which clears and sets a timer for every chunk (thousands a reply, each a Timeout
   * and its async hooks): here a chunk only notes the time (`heard`), and the one timer, when it fires early, is
   * set again for what is left. Only for a call without tools: with tools, the SDK stops the clock while they
   * run, between the Model's chunks, which the stream we read does not show.
   */
  watchQuiet(ms: number): void {
    this.quietMs = ms;
  }

  /** A chunk came from the Provider: the quiet time counts again from now. */
  heard(): void {
    if (this.quietMs === undefined) return;
    this.lastHeard = performance.now();
    this.quietTimer ??= setTimeout(() => this.checkQuiet(), this.quietMs);
  }

  close(): void {
    clearTimeout(this.timer);
    clearTimeout(this.quietTimer);
    this.quietTimer = undefined;
  }

  private checkQuiet(): void {
    const quietMs = this.quietMs!;
    const left = this.lastHeard + quietMs - performance.now();
    if (left > 0) {
      this.quietTimer = setTimeout(() => this.checkQuiet(), left);
      return;
    }
    this.quietTimer = undefined;
    this.end(providerQuiet(quietMs));
  }

  private end(reached: LimitReached): void {
    if (this.reached) return;
    this.reached = reached;
    this.controller.abort(reached);
  }
}

/** What a fragment adds to the reply: its text for text and reasoning, else its JSON (tools, files). */
export function charsOf(fragment: Part): number {
  return fragment.type === 'text' || fragment.type === 'reasoning'
    ? fragment.text.length
    : JSON.stringify(fragment).length;
}
