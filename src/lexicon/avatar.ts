import { CID } from 'multiformats/cid';
import { create as createDigest } from 'multiformats/hashes/digest';
import { sha256 } from 'multiformats/hashes/sha2';

/**
 * An NPC's picture as a published agent's `avatar` (ADR 0065): a blob in the Player's repository, referenced from
 * the session record. Only the image types the lexicon accepts, sniffed from the bytes (never taken from a stored
 * or claimed type), and at most the lexicon's `maxSize`. Record validation checks neither (a PDS checks them on
 * upload, only when it knows the lexicon, which it does not), so the publishing side and the reading side check.
 */
export const AVATAR_MIMES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;
export type AvatarMime = (typeof AVATAR_MIMES)[number];
/** The lexicon's `maxSize` for `#agent.avatar`, in bytes. */
export const AVATAR_MAX_BYTES = 1_000_000;

/** A blob as the record references it. */
export interface PublishedAvatar {
  cid: string;
  mimeType: AvatarMime;
  size: number;
}

const starts = (b: Uint8Array, sig: readonly number[], at = 0) => sig.every((x, i) => b[at + i] === x);

/** The image type the bytes are, by their signature; undefined for anything else. Pure. */
export function sniffImage(b: Uint8Array): AvatarMime | undefined {
  if (starts(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (starts(b, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (starts(b, [0x47, 0x49, 0x46, 0x38]) && (b[4] === 0x37 || b[4] === 0x39) && b[5] === 0x61)
    return 'image/gif';
  if (starts(b, [0x52, 0x49, 0x46, 0x46]) && starts(b, [0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
  return undefined;
}

/**
 * The blob reference a PDS gives these bytes on `com.atproto.repo.uploadBlob` (CIDv1, raw codec, sha-256), so the
 * record can be projected before the upload; undefined when they are not an accepted image or are too large.
 */
export async function avatarBlob(bytes: Uint8Array): Promise<PublishedAvatar | undefined> {
  const mimeType = sniffImage(bytes);
  if (!mimeType || bytes.length === 0 || bytes.length > AVATAR_MAX_BYTES) return undefined;
  const cid = CID.createV1(0x55, await sha256.digest(bytes)).toString();
  return { cid, mimeType, size: bytes.length };
}

/**
 * The same reference from what is stored of the bytes: their sha-256, their size and their first bytes (enough to
 * know the type), so a reference is known without reading the whole picture. Pure.
 */
export function avatarFromFacts(facts: { sha256: Uint8Array; size: number; head: Uint8Array }) {
  const mimeType = sniffImage(facts.head);
  if (!mimeType || facts.size <= 0 || facts.size > AVATAR_MAX_BYTES || facts.sha256.length !== 32)
    return undefined;
  const cid = CID.createV1(0x55, createDigest(sha256.code, facts.sha256)).toString();
  return { cid, mimeType, size: facts.size } satisfies PublishedAvatar;
}

/** The avatar in a record's JSON form (what applyWrites sends and the index keeps). Pure. */
export function avatarJson(a: PublishedAvatar) {
  return { $type: 'blob' as const, ref: { $link: a.cid }, mimeType: a.mimeType, size: a.size };
}

/**
 * A published agent's avatar as a reader may show it: a well-formed raw-codec CID, an accepted image type, and a
 * size within the lexicon's; undefined otherwise (a hostile record can claim anything). Pure.
 */
export function readAvatar(v: unknown): PublishedAvatar | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const o = v as { $type?: unknown; ref?: unknown; mimeType?: unknown; size?: unknown };
  const link =
    o.ref && typeof o.ref === 'object' && '$link' in o.ref ? (o.ref as { $link: unknown }).$link : o.ref;
  const cid = link instanceof CID ? link : typeof link === 'string' ? parseCid(link) : undefined;
  if (o.$type !== 'blob' || !cid || cid.code !== 0x55) return undefined;
  if (!AVATAR_MIMES.includes(o.mimeType as AvatarMime)) return undefined;
  if (typeof o.size !== 'number' || !Number.isInteger(o.size) || o.size <= 0 || o.size > AVATAR_MAX_BYTES)
    return undefined;
  return { cid: cid.toString(), mimeType: o.mimeType as AvatarMime, size: o.size };
}

function parseCid(s: string): CID | undefined {
  try {
    return s.length <= 100 ? CID.parse(s) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether bytes are the avatar a record references: its declared type by their signature, its size, its CID. */
export async function isAvatarBytes(bytes: Uint8Array, a: PublishedAvatar): Promise<boolean> {
  const actual = await avatarBlob(bytes);
  return !!actual && actual.cid === a.cid && actual.mimeType === a.mimeType && actual.size === a.size;
}
