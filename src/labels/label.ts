import { cborEncode } from '@atproto/lex-cbor';
import { ErrorFrame, Frame } from '@atproto/xrpc-server';
import { z } from 'zod';

/**
 * The pure half of following a labeler: a subscribeLabels frame's bytes to what it says, each label checked for
 * shape, and the bytes a label's signature is over. No I/O here (keys are looked up by the caller).
 */

/** Most bytes one frame may hold (the socket refuses bigger ones) and most labels one frame may carry. */
export const MAX_FRAME_BYTES = 1024 * 1024;
export const MAX_LABELS_PER_FRAME = 1000;

/** Hide a subject from this instance's reader and XRPC. Any other value is shown as a notice to click through. */
export const HIDING = ['!takedown', '!hide'] as const;

/**
 * Years 1–9999: a date outside parses here, but postgres.js sends it as JavaScript writes it (`-005000-…`,
 * `+010000-…`), which PostgreSQL does not read.
 */
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');
const DATE = z
  .string()
  .max(64)
  .refine((s) => {
    const t = Date.parse(s);
    return t >= EARLIEST && t <= LATEST;
  }, 'a datetime of years 1–9999');
/**
 * Text PostgreSQL stores: no NUL, and within `maxBytes` of UTF-8 where it is part of a key (an index entry holds
 * at most 2,704 bytes). A label it refuses would be read again and again from the stored cursor.
 */
const TEXT = (max: number, min = 1, maxBytes = Number.POSITIVE_INFINITY) =>
  z
    .string()
    .min(min)
    .max(max)
    .refine((s) => !s.includes('\0'), 'no NUL')
    .refine((s) => s.length <= maxBytes / 3 || new TextEncoder().encode(s).length <= maxBytes, 'too long');
/** com.atproto.label.defs#label, with the lengths the lexicon gives. */
export const Label = z
  .object({
    ver: z.number().int().optional(),
    src: z.string().regex(/^did:[a-z]+:[a-zA-Z0-9._:%-]{1,2000}$/),
    // With the labeler's DID and `val` (at most 512 bytes), the labels' key (src, uri, val).
    uri: TEXT(8192, 1, 2000),
    cid: TEXT(200, 0).optional(),
    val: TEXT(128),
    neg: z.boolean().optional(),
    cts: DATE,
    exp: DATE.optional(),
    sig: z.instanceof(Uint8Array),
    // Kept as they came: the signature is over every field the labeler wrote, known here or not.
  })
  .loose();
export type Label = z.infer<typeof Label>;

/** A label's subject is an account (a DID) or a record (an at:// URI); anything else names nothing we serve. */
const SUBJECT =
  /^(did:[a-z]+:[a-zA-Z0-9._:%-]+|at:\/\/did:[a-z]+:[a-zA-Z0-9._:%-]+\/[a-zA-Z0-9.-]+\/[^/\s]+)$/;

export type Message =
  | { kind: 'labels'; seq: number; labels: Label[]; malformed: number }
  | { kind: 'info'; name: string; message?: string }
  | { kind: 'error'; code: string; message?: string }
  | { kind: 'refused'; reason: string; seq?: number };

/**
 * One frame: `#labels` (seq and labels, each checked for shape; those that fail are counted, not kept), `#info`
 * (e.g. OutdatedCursor), an error frame, or refused with why (bytes that are not a frame, too many labels).
 */
export function decodeFrame(bytes: Uint8Array): Message {
  if (bytes.byteLength > MAX_FRAME_BYTES) return { kind: 'refused', reason: 'frame too large' };
  let frame: Frame;
  try {
    frame = Frame.fromBytes(bytes);
  } catch {
    return { kind: 'refused', reason: 'not a frame' };
  }
  if (frame instanceof ErrorFrame) return { kind: 'error', code: frame.code, message: frame.message };
  const body = frame.body as Record<string, unknown> | null;
  const type = frame.isMessage() ? frame.type : undefined;
  if (type === '#info') {
    const name = typeof body?.name === 'string' ? body.name.slice(0, 100) : 'unknown';
    return { kind: 'info', name, message: typeof body?.message === 'string' ? body.message : undefined };
  }
  if (type !== '#labels') return { kind: 'refused', reason: `unknown message type ${String(type)}` };
  const seq = body?.seq;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0)
    return { kind: 'refused', reason: 'no seq' };
  const raw = body?.labels;
  if (!Array.isArray(raw)) return { kind: 'refused', reason: 'no labels', seq };
  if (raw.length > MAX_LABELS_PER_FRAME) return { kind: 'refused', reason: 'too many labels', seq };
  const labels: Label[] = [];
  for (const item of raw) {
    const parsed = Label.safeParse(item);
    if (parsed.success && SUBJECT.test(parsed.data.uri)) labels.push(parsed.data);
  }
  return { kind: 'labels', seq, labels, malformed: raw.length - labels.length };
}

/** What a label's signature is over: the DAG-CBOR of the label as it came, without `sig`. */
export function signedBytes(label: Label): Uint8Array {
  const { sig: _sig, ...unsigned } = label;
  return cborEncode(unsigned as never);
}
