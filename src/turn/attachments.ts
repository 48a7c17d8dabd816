import { blobsOf, isTextType, readBlobBytes } from '../attachments/index.ts';
import type { Sql } from '../db/index.ts';
import type { AttachmentPart } from '../parts/index.ts';
import type { InputSupport } from '../village/index.ts';
import type { AttachmentContent, HistoryTurn } from './history.ts';

/**
 * The most attachment bytes one Provider request carries (pictures and PDFs; text counts through the window).
 * Newest first: an older picture beyond it is named in a note instead of being sent again. Under what Anthropic
 * (32 MB a request) and OpenAI (50 MB of files) accept.
 */
export const ATTACHMENT_BYTES_PER_REQUEST = 24 * 1024 * 1024;
/**
 * The most picture and PDF bytes all replies of this process hold at once: each Provider request keeps its
 * attachments in memory (and base64 copies) while the reply runs, so many Players attaching at once could
 * otherwise exhaust the server. Past it, an attachment is named in a note for this reply instead.
 */
export const ATTACHMENT_BYTES_IN_FLIGHT = 192 * 1024 * 1024;
let inFlight = 0;

/** A text file or page is sent up to this many characters (the window counted it at its estimate). */
const MAX_TEXT_CHARS = 400_000;

/**
 * Loads what each attachment of the windowed history is sent as, for a Model that reads `support`. Bytes are read
 * only for what is sent; a kind the Model cannot read becomes a note saying so, never a silent drop.
 */
export async function loadAttachments(
  sql: Sql,
  conversationId: string,
  turns: readonly HistoryTurn[],
  support: InputSupport,
  limit = ATTACHMENT_BYTES_IN_FLIGHT,
): Promise<{ contents: Map<string, AttachmentContent>; release: () => void }> {
  const wanted: AttachmentPart[] = [];
  for (let i = turns.length - 1; i >= 0; i--) wanted.push(...(turns[i]!.attachments ?? []));
  const contents = new Map<string, AttachmentContent>();
  let held = 0;
  const release = () => {
    inFlight -= held;
    held = 0;
  };
  if (wanted.length === 0) return { contents, release };
  const blobOf = await blobsOf(
    sql,
    conversationId,
    wanted.map((a) => a.id),
  );
  let budget = ATTACHMENT_BYTES_PER_REQUEST;
  const reads: Promise<void>[] = [];
  for (const a of wanted) {
    const blobId = blobOf.get(a.id);
    if (!blobId) {
      contents.set(a.id, { kind: 'note', text: 'it is no longer stored' });
      continue;
    }
    const mediaType = a.type === 'url' ? 'text/plain' : a.mediaType;
    if (isTextType(mediaType)) {
      reads.push(
        readBlobBytes(sql, blobId, MAX_TEXT_CHARS * 4).then((bytes) => {
          contents.set(a.id, { kind: 'text', text: clipText(new TextDecoder().decode(bytes)) });
        }),
      );
      continue;
    }
    const kind = mediaType.startsWith('image/')
      ? 'image'
      : mediaType === 'application/pdf'
        ? 'pdf'
        : undefined;
    const can = kind === 'image' ? support.images : kind === 'pdf' ? support.pdfs : 'unsupported';
    if (!kind || can === 'unsupported') {
      contents.set(a.id, {
        kind: 'note',
        text: `this Model cannot read ${kind === 'pdf' ? 'PDFs' : kind === 'image' ? 'images' : 'this kind of file'}`,
      });
      continue;
    }
    if (a.size > budget) {
      contents.set(a.id, {
        kind: 'note',
        text: 'it was not sent again with this message (too much attached in all)',
      });
      continue;
    }
    if (inFlight + a.size > limit) {
      contents.set(a.id, { kind: 'note', text: 'the server was too busy to send it with this message' });
      continue;
    }
    budget -= a.size;
    inFlight += a.size;
    held += a.size;
    reads.push(
      readBlobBytes(sql, blobId).then((bytes) => {
        contents.set(a.id, kind === 'image' ? { kind, bytes, mediaType } : { kind, bytes });
      }),
    );
  }
  try {
    await Promise.all(reads);
  } catch (e) {
    release();
    throw e;
  }
  return { contents, release };
}

function clipText(text: string): string {
  return text.length <= MAX_TEXT_CHARS ? text : `${text.slice(0, MAX_TEXT_CHARS)}\n[…the rest was cut]`;
}
