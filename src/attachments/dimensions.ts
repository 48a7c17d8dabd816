/**
 * A picture's width and height in pixels, read from its header (PNG, GIF, WebP, JPEG), so the transcript can
 * reserve its box before the bytes arrive. Pure; the caller hands in the file's first bytes (JPEG's frame
 * header can sit after the EXIF block, so `IMAGE_HEAD_BYTES` of them). Undefined when the header is not there
 * or does not parse: the picture is then shown in a box of fixed size.
 */
export interface Dimensions {
  width: number;
  height: number;
}

/** Bytes of a picture kept to read its size: enough for a JPEG's EXIF block and embedded thumbnail. */
export const IMAGE_HEAD_BYTES = 256 * 1024;
/** Larger than any picture a browser draws: a header claiming more is not believed. */
const MAX_SIDE = 65_535;

export function imageDimensions(head: Uint8Array, mediaType: string): Dimensions | undefined {
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const found = read(view, mediaType);
  if (!found) return undefined;
  const { width, height } = found;
  const ok = (n: number) => Number.isInteger(n) && n > 0 && n <= MAX_SIDE;
  return ok(width) && ok(height) ? { width, height } : undefined;
}

function read(v: DataView, mediaType: string): Dimensions | undefined {
  try {
    switch (mediaType) {
      case 'image/png':
        return png(v);
      case 'image/gif':
        return gif(v);
      case 'image/webp':
        return webp(v);
      case 'image/jpeg':
        return jpeg(v);
      default:
        return undefined;
    }
  } catch {
    return undefined; // a header cut short: a RangeError from the DataView
  }
}

const ascii = (v: DataView, at: number, length: number) =>
  String.fromCharCode(...new Uint8Array(v.buffer, v.byteOffset + at, length));

/** The IHDR chunk follows the 8-byte signature: width and height, big-endian. */
function png(v: DataView): Dimensions | undefined {
  if (ascii(v, 12, 4) !== 'IHDR') return undefined;
  return { width: v.getUint32(16), height: v.getUint32(20) };
}

/** The logical screen size after "GIF87a"/"GIF89a", little-endian. */
function gif(v: DataView): Dimensions | undefined {
  if (ascii(v, 0, 3) !== 'GIF') return undefined;
  return { width: v.getUint16(6, true), height: v.getUint16(8, true) };
}

/** RIFF…WEBP, then the first chunk: lossy (VP8), lossless (VP8L) or extended (VP8X). */
function webp(v: DataView): Dimensions | undefined {
  if (ascii(v, 0, 4) !== 'RIFF' || ascii(v, 8, 4) !== 'WEBP') return undefined;
  const chunk = ascii(v, 12, 4);
  if (chunk === 'VP8 ') {
    // The key frame's start code, then 14-bit width and height (2 bits of scale above them).
    if (v.getUint8(23) !== 0x9d || v.getUint8(24) !== 0x01 || v.getUint8(25) !== 0x2a) return undefined;
    return { width: v.getUint16(26, true) & 0x3fff, height: v.getUint16(28, true) & 0x3fff };
  }
  if (chunk === 'VP8L') {
    if (v.getUint8(20) !== 0x2f) return undefined;
    const bits = v.getUint32(21, true);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X') {
    const u24 = (at: number) => v.getUint8(at) | (v.getUint8(at + 1) << 8) | (v.getUint8(at + 2) << 16);
    return { width: u24(24) + 1, height: u24(27) + 1 };
  }
  return undefined;
}

/**
 * Walks the JPEG segments to the first start-of-frame (SOF0–SOF15 but DHT, JPG and DAC), whose header holds
 * height then width. Pictures rotated by EXIF are reported as stored: the box's ratio may be the other way up,
 * which only letterboxes the thumbnail.
 */
function jpeg(v: DataView): Dimensions | undefined {
  if (v.getUint16(0) !== 0xffd8) return undefined;
  let at = 2;
  while (at + 9 < v.byteLength) {
    if (v.getUint8(at) !== 0xff) return undefined;
    const marker = v.getUint8(at + 1);
    // Fill bytes before a marker, and markers that carry no length.
    if (marker === 0xff) {
      at += 1;
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2;
      continue;
    }
    const length = v.getUint16(at + 2);
    if (length < 2) return undefined;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
      return { height: v.getUint16(at + 5), width: v.getUint16(at + 7) };
    if (marker === 0xda || marker === 0xd9) return undefined; // image data before any frame header
    at += 2 + length;
  }
  return undefined;
}

/**
 * Keeps a file's first `IMAGE_HEAD_BYTES` as its chunks go by (writeBlob's per-chunk callback), for
 * `imageDimensions` at the end. Holds at most that much, whatever the file's size.
 */
export class ImageHead {
  #chunks: Uint8Array[] = [];
  #bytes = 0;

  push(chunk: Uint8Array): void {
    if (this.#bytes >= IMAGE_HEAD_BYTES) return;
    const take = chunk.subarray(0, IMAGE_HEAD_BYTES - this.#bytes);
    this.#chunks.push(Uint8Array.from(take));
    this.#bytes += take.length;
  }

  dimensions(mediaType: string): Dimensions | undefined {
    return imageDimensions(Buffer.concat(this.#chunks), mediaType);
  }
}
