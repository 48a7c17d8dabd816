/**
 * One event of either source, reduced to what the index does with it. `at` is the event's position in its
 * stream: a relay's sequence number, or Jetstream's time in microseconds; `seq`, Jetstream v2's own number for
 * the event, when it sent one. `rev` is the commit's repo rev.
 */
export type Op = OpKind & { seq?: number };

type OpKind =
  | {
      kind: 'upsert';
      at: number;
      did: string;
      collection: string;
      rkey: string;
      cid: string;
      record: unknown;
      rev?: string;
      /** Why the record may not be indexed, when its reader already knows (too deep to convert, say). */
      refused?: string;
    }
  | { kind: 'delete'; at: number; uri: string; rev?: string }
  | { kind: 'purge'; at: number; did: string; status: string }
  | { kind: 'status'; at: number; did: string; status: string | null }
  | { kind: 'handle'; at: number; did: string; handle: string | null }
  | { kind: 'skip'; at: number };

/**
 * An account event as an op: deleted or taken down purges the author; any other inactive status (deactivated,
 * suspended, desynchronized, throttled, or none given) hides them; active shows them again.
 */
export function accountOp(at: number, did: string, active: boolean, status?: string): Op {
  if (active) return { kind: 'status', at, did, status: null };
  if (status === 'deleted' || status === 'takendown') return { kind: 'purge', at, did, status };
  return { kind: 'status', at, did, status: (status ?? 'inactive').slice(0, 64) };
}
