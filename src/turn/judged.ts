import { createHash } from 'node:crypto';
import type { FirstReads } from './admit.ts';

/**
 * A turn's first reads, kept from a Conversation's last turn on this instance, so the next turn is judged from them
 * and its claim checks them in the same statement (`stillJudgedSql`) — one round trip before the start frame in
 * place of two (ADR 0093). Keyed by the session and the Conversation: another session (a second device, or after
 * signing in again) reads for itself. Never trusted: a claim whose reads changed since writes nothing, and the turn
 * is read and judged again. Bounded by count and by the bytes of the reads' text; a Player with many Conversations
 * only pushes others back to the round trip they would take anyway.
 */
export class JudgedReads {
  readonly #kept = new Map<string, FirstReads>();
  #bytes = 0;

  constructor(
    /** The bytes of all reads kept (their text as PostgreSQL sent it). */
    readonly maxBytes = 8 * 2 ** 20,
    /** One Conversation's reads larger than this (NPCs with very long prompts) are read every turn. */
    readonly maxEntryBytes = 256 * 2 ** 10,
    readonly maxEntries = 2_000,
  ) {}

  get size(): number {
    return this.#kept.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** The reads kept for this session and Conversation, now the most recently used. */
  recall(token: string, conversationId: string): FirstReads | undefined {
    const key = keyOf(token, conversationId);
    const first = this.#kept.get(key);
    if (first) {
      this.#kept.delete(key);
      this.#kept.set(key, first);
    }
    return first;
  }

  keep(token: string, conversationId: string, first: FirstReads): void {
    this.forget(token, conversationId);
    if (first.bytes > this.maxEntryBytes) return;
    this.#kept.set(keyOf(token, conversationId), first);
    this.#bytes += first.bytes;
    // The least recently used go first (a Map iterates in insertion order; recall moves an entry to the end).
    for (const [key, oldest] of this.#kept) {
      if (this.#bytes <= this.maxBytes && this.#kept.size <= this.maxEntries) break;
      this.#kept.delete(key);
      this.#bytes -= oldest.bytes;
    }
  }

  forget(token: string, conversationId: string): void {
    const key = keyOf(token, conversationId);
    const first = this.#kept.get(key);
    if (!first) return;
    this.#kept.delete(key);
    this.#bytes -= first.bytes;
  }
}

// The session's token is not kept as it is: a hash of it, as the sessions table keeps it.
const keyOf = (token: string, conversationId: string) =>
  `${createHash('sha256').update(token).digest('base64url')}:${conversationId}`;
