/**
 * What an attachment takes of the context window, in tokens, estimated once at upload so the window can count it
 * without reading the bytes. Images at a fixed estimate (about what the big Providers charge for a picture of
 * about a megapixel); text at the seed's four characters a token; a PDF per page (its text and, for Providers
 * that look at pages, the page as a picture). Pure.
 */
export const IMAGE_TOKENS = 1600;
export const PDF_PAGE_TOKENS = 1600;
const BYTES_PER_TOKEN = 4;

export function attachmentTokens(mediaType: string, size: number, pages = 0): number {
  if (mediaType.startsWith('image/')) return IMAGE_TOKENS;
  // Page objects packed in compressed streams are not seen: the count is a floor, so is a page per 100 KB.
  if (mediaType === 'application/pdf') return Math.max(1, pages, Math.ceil(size / 102_400)) * PDF_PAGE_TOKENS;
  return Math.ceil(size / BYTES_PER_TOKEN);
}

const PAGE = /\/Type\s*\/Page(?![a-zA-Z])/g;

/**
 * Counts a PDF's page objects as its chunks stream past (a marker split across two chunks is still counted: the
 * tail of each chunk is kept for the next). An estimate for the window, not a parser.
 */
export class PdfPageCounter {
  pages = 0;
  #carry = '';
  push(chunk: Uint8Array) {
    const text = this.#carry + Buffer.from(chunk).toString('latin1');
    let counted = 0;
    for (const m of text.matchAll(PAGE)) {
      const end = m.index + m[0].length;
      // A marker at the very end may be the start of "/Pages": decided with the next chunk.
      if (end >= text.length) break;
      this.pages++;
      counted = end;
    }
    // Keep what could be the start of a marker (never one already counted) for the next chunk.
    this.#carry = text.slice(Math.max(counted, text.length - 24));
  }
}
