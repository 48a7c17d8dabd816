import { isValidDid, isValidRecordKey, isValidTid } from '@atproto/syntax';
import { CID } from 'multiformats/cid';
import { z } from 'zod';
import type { Op } from './ops.ts';
import { accountOp } from './ops.ts';
import { jsonRecordCid, shapeProblem } from './shape.ts';
import { COLLECTIONS } from './store.ts';

/**
 * Jetstream's JSON events (github.com/bluesky-social/jetstream, "Consuming Jetstream"), as far as the index
 * uses them. Jetstream sends no signatures or proofs: the instance is trusted for *who wrote what* (see ADR
 * 0039), but everything else is checked as the relay path checks it — the DID and record key are well-formed,
 * the collection is ours, the cid is the record's own content hash, and the record is lexicon-validated
 * where it is stored. An event that fails a check moves the cursor and changes nothing.
 */
const timeUs = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

const commitEvent = z.object({
  kind: z.literal('commit'),
  did: z.string().max(2048),
  time_us: timeUs,
  commit: z.object({
    operation: z.enum(['create', 'update', 'delete']),
    collection: z.string().max(317),
    rkey: z.string().max(512),
    record: z.record(z.string(), z.unknown()).optional(),
    cid: z.string().max(256).optional(),
    rev: z.string().max(64).optional(),
  }),
});
const identityEvent = z.object({
  kind: z.literal('identity'),
  did: z.string().max(2048),
  time_us: timeUs,
});
const accountEvent = z.object({
  kind: z.literal('account'),
  did: z.string().max(2048),
  time_us: timeUs,
  account: z.object({ active: z.boolean(), status: z.string().max(64).optional() }),
});
const jetstreamEvent = z.discriminatedUnion('kind', [commitEvent, identityEvent, accountEvent]);
const anyEvent = z.object({ time_us: timeUs });

export type JetstreamEvent = z.infer<typeof jetstreamEvent>;

/** What one message means for the index, before the checks that need I/O (cid hash, handle). */
export type Parsed = (
  | { kind: 'op'; op: Op }
  | { kind: 'record'; op: Extract<Op, { kind: 'upsert' }> }
  | { kind: 'identity'; at: number; did: string }
  | { kind: 'invalid'; at: number | null; reason: string }
) & {
  /** Jetstream v2's own number for the event (`cursor`), when it sent one. */
  seq?: number;
};

/** A v2 event number: below 10^15, where Jetstream reads a cursor as a time in µs instead. */
function seqOf(json: unknown): number | undefined {
  const c = (json as { cursor?: unknown } | null)?.cursor;
  return typeof c === 'number' && Number.isSafeInteger(c) && c >= 0 && c < 1e15 ? c : undefined;
}

const ours = new Set<string>(COLLECTIONS);
const FUTURE_SKEW_MS = 10 * 60_000;

/** A time far ahead would hold the cursor there for good (it only moves forward): never taken, whatever the event. */
function inFuture(timeUs: number): boolean {
  return timeUs > (Date.now() + FUTURE_SKEW_MS) * 1000;
}

/** Pure: parses one message's text. Never throws, whatever the text. */
export function parseJetstreamMessage(text: string): Parsed {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { kind: 'invalid', at: null, reason: 'not JSON' };
  }
  const seq = seqOf(json);
  const parsed = parseEvent(json);
  return seq === undefined ? parsed : { ...parsed, seq };
}

function parseEvent(json: unknown): Parsed {
  const parsed = jetstreamEvent.safeParse(json);
  if (!parsed.success) {
    // A kind this code does not know (Jetstream may add some) still moves the cursor past it.
    const at = anyEvent.safeParse(json);
    const t = at.success && !inFuture(at.data.time_us) ? at.data.time_us : null;
    return { kind: 'invalid', at: t, reason: 'not a Jetstream event' };
  }
  const e = parsed.data;
  const at = e.time_us;
  if (inFuture(at)) return { kind: 'invalid', at: null, reason: 'a time in the future' };
  if (!isValidDid(e.did)) return { kind: 'invalid', at, reason: 'not a DID' };
  if (e.kind === 'identity') return { kind: 'identity', at, did: e.did };
  if (e.kind === 'account')
    return { kind: 'op', op: accountOp(at, e.did, e.account.active, e.account.status) };
  const c = e.commit;
  // Jetstream filters by wantedCollections, but an instance that sends more must not widen the index.
  if (!ours.has(c.collection)) return { kind: 'op', op: { kind: 'skip', at } };
  if (!isValidRecordKey(c.rkey)) return { kind: 'invalid', at, reason: 'not a record key' };
  const rev = c.rev && isValidTid(c.rev) ? c.rev : undefined;
  if (c.operation === 'delete')
    return { kind: 'op', op: { kind: 'delete', at, uri: `at://${e.did}/${c.collection}/${c.rkey}`, rev } };
  if (!c.record || !c.cid) return { kind: 'invalid', at, reason: 'a write without its record or cid' };
  // Everything after this (the cid's hash, validation) recurses: the shape is bounded first (see shape.ts).
  const problem = shapeProblem(c.record);
  if (problem) return { kind: 'invalid', at, reason: `at://${e.did}/${c.collection}/${c.rkey}: ${problem}` };
  return {
    kind: 'record',
    op: {
      kind: 'upsert',
      at,
      did: e.did,
      collection: c.collection,
      rkey: c.rkey,
      cid: c.cid,
      record: c.record,
      ...(rev ? { rev } : {}),
    },
  };
}

/** The cid a record's DAG-CBOR encoding hashes to must be the one the event claims (as a relay's proof does). */
export async function cidMatches(cid: string, record: unknown): Promise<boolean> {
  try {
    const claimed = CID.parse(cid);
    const actual = await jsonRecordCid(record);
    return actual.equals(claimed as never);
  } catch {
    return false;
  }
}
