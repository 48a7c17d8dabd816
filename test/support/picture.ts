import { crc32, deflateSync } from 'node:zlib';

/**
 * A 2×1 red-and-blue picture, unlike the 1×1 one an export without an avatar carries; another `blue` makes
 * another picture (other bytes).
 */
export function picture(blue = 255): Uint8Array {
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    return [head, data, crc];
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(2, 0);
  ihdr.writeUInt32BE(1, 4);
  ihdr.set([8, 6, 0, 0, 0], 8);
  const row = Buffer.from([0, 255, 0, 0, 255, 0, 0, blue, 255]);
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      ...chunk('IHDR', ihdr),
      ...chunk('IDAT', deflateSync(row)),
      ...chunk('IEND', Buffer.alloc(0)),
    ]),
  );
}
