import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { writeBlob } from '../../src/attachments/blobs.ts';
import { connect, type Sql } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// A blob's chunks go in by COPY. A COPY shares nothing: on a pool connection that other queries also use, one
// pipelined behind it reached PostgreSQL mid-copy, which dropped the connection — the load test's 500 on a
// page attach ("unexpected message type 0x42 during COPY from stdin").
let db: TestDatabase;
let sql: Sql;
beforeAll(async () => {
  db = await createTestDatabase();
  sql = connect(db.url, { max: 2 });
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await db?.drop();
});

async function* pieces(bytes: Buffer) {
  for (let at = 0; at < bytes.length; at += 64 * 1024) yield bytes.subarray(at, at + 64 * 1024);
}

it('blobs written while many other queries share a small pool are all stored, and no query fails', async () => {
  const files = Array.from({ length: 12 }, () => randomBytes(300 * 1024));
  const others = Array.from({ length: 400 }, (_, i) => sql<{ n: number }[]>`select ${i}::int as n`);
  const written = await Promise.all(files.map((f) => writeBlob(sql, pieces(f), 10 * 1024 * 1024)));
  expect((await Promise.all(others)).map((r) => r[0]!.n)).toEqual(others.map((_, i) => i));
  for (const [i, w] of written.entries()) {
    const [row] = await sql<{ bytes: Buffer }[]>`
      select string_agg(data, ''::bytea order by idx) as bytes from blob_chunks where blob_id = ${w.stagingId}`;
    expect(row!.bytes.equals(files[i]!)).toBe(true);
  }
});
