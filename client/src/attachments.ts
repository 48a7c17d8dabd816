import type { AttachmentPart } from '../../src/parts/index.ts';
import { AttachmentView } from '../../src/wire/index.ts';
import { fetchAs, sendFile } from './api.ts';

/**
 * Uploads one file to a Conversation: the bytes as the body (never as JSON, whatever the file is), its name in the
 * query. The server sniffs the type and answers with the Part the Message will carry.
 */
export async function uploadFile(
  conversationId: string,
  file: File,
  signal?: AbortSignal,
): Promise<AttachmentPart> {
  const name = file.name || `pasted.${file.type.split('/')[1] ?? 'bin'}`;
  // The server takes UPLOADS_AT_ONCE at a time from a Player (a fourth is refused): the rest wait their turn.
  await uploadSlot();
  try {
    return await sendFile(
      AttachmentView,
      `/api/conversations/${conversationId}/attachments?name=${encodeURIComponent(name)}`,
      file,
      signal,
    );
  } finally {
    freeSlot();
  }
}

/** As the server's limit of uploads streaming at once per Player (src/attachments/routes.ts). */
const UPLOADS_AT_ONCE = 3;
let uploading = 0;
const waiting: (() => void)[] = [];
function uploadSlot(): Promise<void> {
  if (uploading < UPLOADS_AT_ONCE) {
    uploading++;
    return Promise.resolve();
  }
  return new Promise((go) => waiting.push(go));
}
function freeSlot() {
  const next = waiting.shift();
  if (next)
    next(); // the slot passes on
  else uploading--;
}

/** Fetches a page on the server and attaches its readable text. */
export const attachUrl = (conversationId: string, url: string): Promise<AttachmentPart> =>
  fetchAs(AttachmentView, `/api/conversations/${conversationId}/attachments/url`, { body: { url } });

/** Removes an upload that was not sent (best effort: an unsent upload is also cleaned up after a day). */
export const discardUpload = (id: string) =>
  fetch(`/api/attachments/${id}`, { method: 'DELETE', headers: { 'x-agentsville': '1' } }).catch(() => {});

export const attachmentUrl = (id: string) => `/api/attachments/${id}`;

export function formatSize(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KB`;
  return `${n} B`;
}
