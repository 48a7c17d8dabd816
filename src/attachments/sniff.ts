import { fileTypeFromBuffer } from 'file-type';

/** How many leading bytes are read before a file's type is decided. */
export const SNIFF_BYTES = 4100;

const TEXT_BY_EXTENSION: Record<string, string> = {
  md: 'text/markdown',
  markdown: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
};

/**
 * A file's media type from its first bytes, never from its name or the type the browser declared: binary
 * formats by their magic numbers (file-type), anything else only when it reads as UTF-8 text with no control
 * bytes. For text, the name picks the flavour (Markdown, CSV, JSON, else plain); the flavour only changes
 * how it is labelled. Undefined when the bytes are neither a known format nor text.
 */
export async function sniffMediaType(head: Uint8Array, name: string): Promise<string | undefined> {
  if (head.length === 0) return 'text/plain';
  const known = await fileTypeFromBuffer(head);
  if (known) return known.mime;
  if (!looksLikeText(head)) return undefined;
  const ext = name.toLowerCase().match(/\.([a-z0-9]+)$/)?.[1] ?? '';
  return TEXT_BY_EXTENSION[ext] ?? 'text/plain';
}

const decoder = () => new TextDecoder('utf-8', { fatal: true });

function looksLikeText(head: Uint8Array): boolean {
  try {
    // stream: a multi-byte character cut at the end of the head is not an error.
    decoder().decode(head, { stream: true });
  } catch {
    return false;
  }
  for (const byte of head) {
    // Tab, line feed, form feed, carriage return and escape are text; other C0 controls and DEL are not.
    if (
      (byte < 0x20 && byte !== 9 && byte !== 10 && byte !== 12 && byte !== 13 && byte !== 27) ||
      byte === 0x7f
    )
      return false;
  }
  return true;
}

/** Text types, whose bytes are sent to a Model as text whatever the Model (every Model reads text). */
export const isTextType = (mediaType: string) =>
  mediaType.startsWith('text/') || mediaType === 'application/json';
