import { crc32, deflateSync } from 'node:zlib';

/**
 * The text chunks of a PNG (tEXt, and iTXt when uncompressed), which is where character cards keep their JSON.
 * Only chunk framing is read — never the pixels — and every length is checked against the bytes there are.
 */
export class PngError extends Error {}

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const MAX_CHUNKS = 10_000;

export function isPng(bytes: Uint8Array): boolean {
  return bytes.length >= 8 && SIGNATURE.every((b, i) => bytes[i] === b);
}

export function pngTextChunks(bytes: Uint8Array): Map<string, string> {
  if (!isPng(bytes)) throw new PngError('This is not a PNG file.');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const texts = new Map<string, string>();
  let at = 8;
  for (let n = 0; at < bytes.length && n < MAX_CHUNKS; n++) {
    if (at + 12 > bytes.length) throw new PngError('The PNG is cut short.');
    const length = view.getUint32(at);
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    if (length > bytes.length - at - 12) throw new PngError('The PNG is cut short or damaged.');
    const data = bytes.subarray(at + 8, at + 8 + length);
    if (type === 'tEXt') {
      const nul = data.indexOf(0);
      if (nul > 0) setOnce(texts, latin1(data.subarray(0, nul)), latin1(data.subarray(nul + 1)));
    } else if (type === 'iTXt') {
      // keyword \0 compression-flag compression-method language \0 translated-keyword \0 text (UTF-8)
      const nul = data.indexOf(0);
      if (nul > 0 && data[nul + 1] === 0) {
        const lang = data.indexOf(0, nul + 3);
        const translated = lang < 0 ? -1 : data.indexOf(0, lang + 1);
        if (translated >= 0)
          setOnce(
            texts,
            latin1(data.subarray(0, nul)),
            new TextDecoder().decode(data.subarray(translated + 1)),
          );
      }
    } else if (type === 'IEND') break;
    at += 12 + length;
  }
  return texts;
}

const latin1 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
/** Keywords compare without case; the first chunk of a keyword wins. */
function setOnce(m: Map<string, string>, key: string, value: string) {
  const k = key.toLowerCase();
  if (!m.has(k)) m.set(k, value);
}

const TEXT_CHUNKS = new Set(['tEXt', 'iTXt', 'zTXt']);

/** A chunk's framing: length, type, data, CRC. */
function frame(type: string, data: Buffer): Buffer[] {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return [head, data, crc];
}
const textChunk = (k: string, v: string) =>
  frame('tEXt', Buffer.concat([Buffer.from(k, 'latin1'), Buffer.from([0]), Buffer.from(v, 'latin1')]));

/**
 * A card PNG's picture: the same PNG with its text chunks (the card, and any other text) taken out, so the
 * avatar does not carry a stale copy of the card. Every length is checked, as in `pngTextChunks`.
 */
export function pngWithoutText(bytes: Uint8Array): Uint8Array {
  if (!isPng(bytes)) throw new PngError('This is not a PNG file.');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kept: Uint8Array[] = [bytes.subarray(0, 8)];
  let at = 8;
  let ended = false;
  for (let n = 0; at < bytes.length && n < MAX_CHUNKS && !ended; n++) {
    if (at + 12 > bytes.length) throw new PngError('The PNG is cut short.');
    const length = view.getUint32(at);
    if (length > bytes.length - at - 12) throw new PngError('The PNG is cut short or damaged.');
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    if (!TEXT_CHUNKS.has(type)) kept.push(bytes.subarray(at, at + 12 + length));
    at += 12 + length;
    ended = type === 'IEND';
  }
  if (!ended) throw new PngError('The PNG has no end (IEND) chunk.');
  return new Uint8Array(Buffer.concat(kept));
}

/** A picture (a PNG without text, see `pngWithoutText`) carrying `entries` as tEXt chunks, before its IEND. */
export function withText(picture: Uint8Array, entries: Record<string, string>): Uint8Array {
  const b = Buffer.from(picture.buffer, picture.byteOffset, picture.byteLength);
  const end = b.length - 12; // IEND is the last chunk, 12 bytes long
  const texts = Object.entries(entries).flatMap(([k, v]) => textChunk(k, v));
  return new Uint8Array(Buffer.concat([b.subarray(0, end), ...texts, b.subarray(end)]));
}

/** A PNG holding one tEXt chunk per entry (for exports and tests): a 1×1 transparent picture. */
export function pngWithText(entries: Record<string, string>): Uint8Array {
  const chunks: Buffer[] = [Buffer.from(SIGNATURE)];
  const chunk = (type: string, data: Buffer) => chunks.push(...frame(type, data));
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0);
  ihdr.writeUInt32BE(1, 4);
  ihdr.set([8, 6, 0, 0, 0], 8);
  chunk('IHDR', ihdr);
  for (const [k, v] of Object.entries(entries))
    chunk('tEXt', Buffer.concat([Buffer.from(k, 'latin1'), Buffer.from([0]), Buffer.from(v, 'latin1')]));
  // One transparent pixel: a row of [filter 0, r, g, b, a], deflated.
  chunk('IDAT', deflateSync(Buffer.alloc(5)));
  chunk('IEND', Buffer.alloc(0));
  return new Uint8Array(Buffer.concat(chunks));
}
