import fc from 'fast-check';
import { expect, it } from 'vitest';
import { IMAGE_HEAD_BYTES, ImageHead, imageDimensions } from '../../src/attachments/dimensions.ts';
import { png } from '../support/files.ts';

const bytes = (...parts: (number[] | string | Buffer)[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
const u16le = (n: number) => [n & 0xff, n >> 8];
const u16be = (n: number) => [n >> 8, n & 0xff];
const u24le = (n: number) => [n & 0xff, (n >> 8) & 0xff, n >> 16];

it('reads the size of PNG, GIF, WebP (lossy, lossless, extended) and JPEG headers', () => {
  expect(imageDimensions(png(64, 48), 'image/png')).toEqual({ width: 64, height: 48 });
  expect(imageDimensions(bytes('GIF89a', u16le(300), u16le(200), [0, 0, 0]), 'image/gif')).toEqual({
    width: 300,
    height: 200,
  });
  const riff = (chunk: Buffer) => bytes('RIFF', [0, 0, 0, 0], 'WEBP', chunk);
  expect(
    imageDimensions(
      riff(bytes('VP8 ', [0, 0, 0, 0], [0, 0, 0], [0x9d, 0x01, 0x2a], u16le(640), u16le(480))),
      'image/webp',
    ),
  ).toEqual({ width: 640, height: 480 });
  // Lossless: 14 bits each, minus one, after the 0x2f signature.
  const bits = (1023 - 1) | ((511 - 1) << 14);
  expect(
    imageDimensions(
      riff(
        bytes(
          'VP8L',
          [0, 0, 0, 0],
          [0x2f],
          [bits & 0xff, (bits >> 8) & 0xff, (bits >> 16) & 0xff, bits >>> 24],
        ),
      ),
      'image/webp',
    ),
  ).toEqual({ width: 1023, height: 511 });
  expect(
    imageDimensions(riff(bytes('VP8X', [0, 0, 0, 0], [0, 0, 0, 0], u24le(4095), u24le(2047))), 'image/webp'),
  ).toEqual({ width: 4096, height: 2048 });
  // JPEG: an APP1 (EXIF) block, then a tables segment, then the progressive frame header (SOF2).
  const exif = Buffer.alloc(30_000, 7);
  const jpeg = bytes(
    [0xff, 0xd8],
    [0xff, 0xe1],
    u16be(exif.length + 2),
    exif,
    [0xff, 0xdb],
    u16be(4),
    [0, 0],
    [0xff, 0xc2],
    u16be(17),
    [8],
    u16be(1080),
    u16be(1920),
    [3],
  );
  expect(imageDimensions(jpeg, 'image/jpeg')).toEqual({ width: 1920, height: 1080 });
  // The head kept while streaming reads the same, whatever the chunks.
  const head = new ImageHead();
  for (let i = 0; i < jpeg.length; i += 4096) head.push(jpeg.subarray(i, i + 4096));
  expect(head.dimensions('image/jpeg')).toEqual({ width: 1920, height: 1080 });
});

it('answers undefined, never throws, for cut, foreign or absurd headers; keeps at most IMAGE_HEAD_BYTES', () => {
  expect(imageDimensions(png(4, 4).subarray(0, 18), 'image/png')).toBeUndefined();
  expect(imageDimensions(png(4, 4), 'application/pdf')).toBeUndefined();
  expect(imageDimensions(bytes('GIF89a', u16le(0), u16le(10)), 'image/gif')).toBeUndefined();
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 200 }),
      fc.constantFrom('image/png', 'image/gif', 'image/webp', 'image/jpeg'),
      (head, type) => {
        const d = imageDimensions(head, type);
        if (d) expect(d.width > 0 && d.height > 0 && d.width <= 65_535 && d.height <= 65_535).toBe(true);
      },
    ),
  );
  const big = new ImageHead();
  for (let i = 0; i < 5; i++) big.push(new Uint8Array(100_000));
  // Holds only the head: a 500 kB picture's tail is not kept.
  expect((big as unknown as { dimensions(t: string): unknown }).dimensions('image/png')).toBeUndefined();
  expect(IMAGE_HEAD_BYTES).toBeLessThan(500_000);
});
