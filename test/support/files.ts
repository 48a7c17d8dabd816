import { crc32, deflateSync } from 'node:zlib';
import type { TestApp } from './app.ts';

/** A real PNG of `width`×`height` pixels of one colour (a browser renders it; file-type recognises it). */
export function png(width = 4, height = 4, rgb: [number, number, number] = [200, 40, 40]): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => rgb).flat())]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A small PDF of `pages` pages (enough structure for a type sniffer and a page count). */
export function pdf(pages = 1): Buffer {
  const kids = Array.from({ length: pages }, (_, i) => `${3 + i} 0 R`).join(' ');
  const pageObjects = Array.from(
    { length: pages },
    (_, i) => `${3 + i} 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>\nendobj\n`,
  ).join('');
  return Buffer.from(
    `%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [${kids}] /Count ${pages} >>\nendobj\n${pageObjects}trailer\n<< /Root 1 0 R >>\n%%EOF\n`,
    'latin1',
  );
}

/** The first bytes of a Linux executable. */
export const elf = () =>
  Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(120, 0)]);

/** Uploads `bytes` as a file named `name` to a Conversation, as the web app does (the bytes are the body). */
export function upload(
  app: TestApp,
  cookie: string,
  conversationId: string,
  name: string,
  bytes: Uint8Array | ReadableStream<Uint8Array>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(
    `${app.running.listenUrl}/api/conversations/${conversationId}/attachments?name=${encodeURIComponent(name)}`,
    {
      method: 'POST',
      headers: { cookie, 'x-agentsville': '1', 'content-type': 'application/octet-stream', ...headers },
      body: bytes,
      ...(bytes instanceof ReadableStream ? { duplex: 'half' } : {}),
    } as RequestInit,
  );
}
