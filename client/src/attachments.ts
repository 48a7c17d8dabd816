import { z } from 'zod';
import type { AttachmentPart } from '../../src/parts/index.ts';
import { AttachmentView } from '../../src/wire/index.ts';
import { ApiError, fetchAs } from './api.ts';

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
  const res = await fetch(
    `/api/conversations/${conversationId}/attachments?name=${encodeURIComponent(name)}`,
    {
      method: 'POST',
      headers: { 'x-agentsville': '1', 'content-type': 'application/octet-stream' },
      body: file,
      signal,
    },
  );
  const body = (await res.json().catch(() => null)) as { error?: { code: string; message: string } } | null;
  if (!res.ok)
    throw new ApiError(
      res.status,
      body?.error?.code ?? 'HTTP_ERROR',
      body?.error?.message ?? `The server answered ${res.status}.`,
    );
  const decoded = z.safeDecode(AttachmentView, body as z.input<typeof AttachmentView>);
  if (!decoded.success)
    throw new ApiError(200, 'UNEXPECTED_RESPONSE', 'The server answered in an unexpected form.');
  return decoded.data;
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
