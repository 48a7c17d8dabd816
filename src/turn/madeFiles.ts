import { randomUUID } from 'node:crypto';
import { type KeepLimits, keepFile, NotKept, SNIFF_BYTES } from '../attachments/index.ts';
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
 * A file the Model made (an image from Gemini's image Models, say), kept as an attachment of the reply on the terms
 * of the Player's own uploads (attachments/keep.ts), and shown as a file Part where it came. One that cannot be kept
 * (too large, not a kind the Village accepts, the Player's space full, past MADE_FILES_PER_REPLY) is shown as a file
 * whose bytes are not here, saying why: a reply never drops what its Model made without a word. `index` counts the
 * reply's made files from 1.
 */
export async function keepMadeFile(
  deps: Pick<TurnDeps, 'sql' | 'log'>,
  plan: Pick<TurnPlan, 'playerId' | 'conversation' | 'settings'>,
  messageId: string,
  index: number,
  file: { uint8Array: Uint8Array; mediaType: string },
): Promise<FilePart> {
  const declared = shownType(file.mediaType);
  const kind = declared.startsWith('image/') ? 'image' : 'file';
  const name = `${kind}-${index}.${extension(declared)}`;
  const bytes = file.uint8Array;
  const notKept = (reason: string): FilePart => ({
    type: 'file',
    id: randomUUID(),
    name,
    mediaType: declared,
    size: bytes.byteLength,
    missing: true,
    reason: reason.slice(0, 500),
  });
  if (index > MADE_FILES_PER_REPLY)
    return notKept(`A reply keeps at most ${MADE_FILES_PER_REPLY} files its Model made.`);
  try {
    return await keepFile(
      deps.sql,
      { playerId: plan.playerId, conversationId: plan.conversation.id, messageId },
      { name, size: bytes.byteLength, head: bytes.subarray(0, SNIFF_BYTES), bytes: [bytes] },
      keepLimits(plan.settings),
    );
  } catch (e) {
    if (e instanceof NotKept) return notKept(e.message);
    deps.log('a file the Model made was not stored', e);
    return notKept('The server could not store it.');
  }
}
