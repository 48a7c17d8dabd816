import { randomUUID } from 'node:crypto';
import {
  CHUNK_BYTES,
  type KeepLimits,
  keepFile,
  NotKept,
  SNIFF_BYTES,
  tooLargeToKeep,
} from '../attachments/index.ts';
import type { FilePart } from '../parts/index.ts';
import type { VillageSettings } from '../village/index.ts';
import type { TurnDeps, TurnPlan } from './deps.ts';

/** Files a reply's Model may make that are kept: each is stored, so one reply cannot fill the store. */
export const MADE_FILES_PER_REPLY = 10;

/** What a file an NPC hands the Player may be (one its Model made, one it shares): the Village's upload limits. */
export const keepLimits = (settings: VillageSettings): KeepLimits => ({
  maxBytes: settings.maxAttachmentMb * 1024 * 1024,
  types: settings.attachmentTypes,
  playerBytes: settings.playerAttachmentMb * 1024 * 1024,
});

/** The name a made file is shown by (Models give none), from the type the Model declared: a label only. */
const EXTENSIONS: Record<string, string> = {
  jpeg: 'jpg',
  plain: 'txt',
  markdown: 'md',
  'octet-stream': 'bin',
};
const extension = (type: string) => {
  const sub = type.slice(type.indexOf('/') + 1);
  return EXTENSIONS[sub] ?? (/^[a-z0-9]{1,10}$/.test(sub) ? sub : 'bin');
};

/** A declared media type as shown beside a file not kept: `type/subtype`, or nothing the Model said. */
const shownType = (declared: string) =>
  /^[a-z]+\/[a-z0-9.+-]{1,80}$/i.test(declared) ? declared.toLowerCase() : 'application/octet-stream';

/**
 * Bytes a base64 text holds, read from its length (the checks come before any decoding; a JSON string's base64
 * has no line breaks, and one that had would only be counted a little larger here).
 */
const decodedSize = (b64: string) => {
  const padding = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((b64.length * 3) / 4) - padding);
};

/** Bytes in pieces of a blob chunk: hashed and written a piece at a time, never in one long turn of the loop. */
function* pieces(bytes: Uint8Array): Generator<Uint8Array> {
  for (let at = 0; at < bytes.byteLength; at += CHUNK_BYTES) yield bytes.subarray(at, at + CHUNK_BYTES);
}

/**
 * A file the Model made (an image from Gemini's image Models, say), kept as an attachment of the reply on the terms
 * of the Player's own uploads (attachments/keep.ts), and shown as a file Part where it came. One that cannot be kept
 * (too large, not a kind the Village accepts, the Player's space full, past MADE_FILES_PER_REPLY) is shown as a file
 * whose bytes are not here, saying why: a reply never drops what its Model made without a word. `index` counts the
 * reply's made files from 1. Its base64 is decoded only to be stored (Buffer's decoder, which never throws: bytes
 * that are no base64 come out as no kind of file, refused by their sniffed type).
 */
export async function keepMadeFile(
  deps: Pick<TurnDeps, 'sql' | 'log'>,
  plan: Pick<TurnPlan, 'playerId' | 'conversation' | 'settings'>,
  messageId: string,
  index: number,
  file: { base64: string; mediaType: string },
  /** Made while the Model thought (a `reasoning-file` part). */
  thought = false,
): Promise<FilePart> {
  const part = await keep(deps, plan, messageId, index, file);
  return thought ? { ...part, thought: true } : part;
}

async function keep(
  deps: Pick<TurnDeps, 'sql' | 'log'>,
  plan: Pick<TurnPlan, 'playerId' | 'conversation' | 'settings'>,
  messageId: string,
  index: number,
  file: { base64: string; mediaType: string },
): Promise<FilePart> {
  const declared = shownType(file.mediaType);
  const kind = declared.startsWith('image/') ? 'image' : 'file';
  const name = `${kind}-${index}.${extension(declared)}`;
  const size = decodedSize(file.base64);
  const notKept = (reason: string, bytes = size): FilePart => ({
    type: 'file',
    id: randomUUID(),
    name,
    mediaType: declared,
    size: bytes,
    missing: true,
    reason: reason.slice(0, 500),
  });
  if (index > MADE_FILES_PER_REPLY)
    return notKept(`A reply keeps at most ${MADE_FILES_PER_REPLY} files its Model made.`);
  const limits = keepLimits(plan.settings);
  // Too large is said before the bytes are decoded.
  if (size > limits.maxBytes) return notKept(tooLargeToKeep(limits.maxBytes).message);
  const bytes = Buffer.from(file.base64, 'base64');
  try {
    return await keepFile(
      deps.sql,
      { playerId: plan.playerId, conversationId: plan.conversation.id, messageId },
      { name, size: bytes.byteLength, head: bytes.subarray(0, SNIFF_BYTES), bytes: pieces(bytes) },
      limits,
    );
  } catch (e) {
    if (e instanceof NotKept) return notKept(e.message, bytes.byteLength);
    deps.log('a file the Model made was not stored', e);
    return notKept('The server could not store it.', bytes.byteLength);
  }
}
