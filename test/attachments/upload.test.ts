import { createHash, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { elf, pdf, png, upload } from '../support/files.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

// Uploads, downloads and their limits against the real server and PostgreSQL.
let app: TestApp;
let cookie: string;
let conversationId: string;
/** Reads of stored bytes the server made (a HEAD must make none). */
let chunkReads = 0;
beforeAll(async () => {
  app = await startTestApp(
    {},
    {},
    {
      onQuery: (q) => {
        if (/from blob_chunks/.test(q)) chunkReads++;
      },
    },
  );
  ({ cookie } = await app.signIn());
});
afterAll(async () => {
  await app?.close();
});
beforeEach(async () => {
  await app.db.sql`update village_settings set max_attachment_mb = 20, max_attachments_per_message = 10,
    player_attachment_mb = 1024, attachment_types = default`;
  ({ conversationId } = await setupConversation(app, cookie));
});

const stored = async () => {
  const [row] = await app.db.sql<{ blobs: number; chunks: number; attachments: number }[]>`
    select (select count(*)::int from blobs) as blobs, (select count(*)::int from blob_chunks) as chunks,
      (select count(*)::int from attachments) as attachments`;
  return row!;
};
const error = async (res: Response) =>
  ((await res.json()) as { error: { code: string; message: string } }).error;
const blobsWithHash = async (bytes: Buffer) =>
  (await app.db.sql`select id from blobs where sha256 = ${createHash('sha256').update(bytes).digest()}`)
    .length;

describe('uploading', () => {
  it('judges the type by the bytes, stores each content once, and serves it back with safe headers', async () => {
    const picture = png(8, 8);
    // Named .jpg and declared as anything: it is a PNG, so it is one.
    const res = await upload(app, cookie, conversationId, 'holiday.jpg', picture, {
      'content-type': 'image/jpeg',
    });
    expect(res.status).toBe(201);
    const part = (await res.json()) as { id: string };
    expect(part).toEqual({
      type: 'file',
      id: expect.any(String),
      name: 'holiday.jpg',
      mediaType: 'image/png',
      size: picture.length,
      tokens: 1600,
      // Read from its header, so the transcript reserves its box before it loads.
      width: 8,
      height: 8,
    });
    const got = await app.api(`/api/attachments/${part.id}`, { cookie });
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer())).toEqual(picture);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(got.headers.get('content-disposition')).toMatch(/^inline; filename="holiday.jpg"/);
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
    expect(got.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(got.headers.get('cache-control')).toBe('no-store');
    // A HEAD gives the headers without reading the bytes from the database.
    const reads = chunkReads;
    const head = await app.api(`/api/attachments/${part.id}`, { method: 'HEAD', cookie });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(picture.length));
    expect(chunkReads).toBe(reads);

    // Text: a download, never a page of this origin; its flavour from the name, its class from the bytes.
    const notes = Buffer.from('# Packing list\n- towel\n', 'utf8');
    const text = await upload(app, cookie, conversationId, 'notes.md', notes);
    expect(await text.json()).toMatchObject({ mediaType: 'text/markdown', size: notes.length, tokens: 6 });

    // The same bytes again: a second attachment, the same blob.
    const again = await upload(app, cookie, conversationId, 'copy.png', picture);
    expect(again.status).toBe(201);
    expect(((await again.json()) as { id: string }).id).not.toBe(part.id);
    expect(await blobsWithHash(picture)).toBe(1);
  });

  it('serves a text file as a download, a PDF with its pages counted for the window', async () => {
    const notes = await upload(app, cookie, conversationId, 'a "quoted" näme.txt', Buffer.from('hello'));
    const { id } = (await notes.json()) as { id: string };
    const got = await app.api(`/api/attachments/${id}`, { cookie });
    expect(got.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(got.headers.get('content-disposition')).toBe(
      `attachment; filename="a _quoted_ n_me.txt"; filename*=UTF-8''${encodeURIComponent('a "quoted" näme.txt')}`,
    );
    const doc = await upload(app, cookie, conversationId, 'report.pdf', pdf(3));
    expect(await doc.json()).toMatchObject({ mediaType: 'application/pdf', tokens: 3 * 1600 });
  });

  it('refuses an executable named .png, a kind the Village does not accept, and an empty file; nothing is stored', async () => {
    const before = await stored();
    const exe = await upload(app, cookie, conversationId, 'cat.png', elf(), { 'content-type': 'image/png' });
    expect(exe.status).toBe(415);
    const why = await error(exe);
    expect(why.code).toBe('UNSUPPORTED_ATTACHMENT_TYPE');
    expect(why.message).toContain('holds application/x-elf');
    // Bytes that are neither a known format nor text.
    const noise = Buffer.from(Array.from({ length: 600 }, (_, i) => (i * 37) % 256));
    expect((await upload(app, cookie, conversationId, 'data.txt', noise)).status).toBe(415);
    await app.db.sql`update village_settings set attachment_types = '{image/png}'`;
    const doc = await upload(app, cookie, conversationId, 'report.pdf', pdf());
    expect(doc.status).toBe(415);
    expect((await error(doc)).message).toContain('accepts: image/png');
    const empty = await upload(app, cookie, conversationId, 'empty.png', Buffer.alloc(0));
    expect(empty.status).toBe(400);
    expect((await error(empty)).code).toBe('ATTACHMENT_EMPTY');
    expect(await stored()).toEqual(before);
  });

  it('refuses a file over the limit, declared or only streamed, and over the Player’s space; nothing is stored', async () => {
    await app.db.sql`update village_settings set max_attachment_mb = 1`;
    const before = await stored();
    const big = Buffer.alloc(1024 * 1024 + 10, 'a');
    const declared = await upload(app, cookie, conversationId, 'big.txt', big);
    expect(declared.status).toBe(413);
    expect((await error(declared)).code).toBe('ATTACHMENT_TOO_LARGE');
    // No Content-Length: refused when the bytes pass the limit, and what was written is deleted.
    const streamed = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 5; i++) c.enqueue(big.subarray(i * 262_144, (i + 1) * 262_144));
        c.close();
      },
    });
    const res = await upload(app, cookie, conversationId, 'big.txt', streamed);
    expect(res.status).toBe(413);
    expect((await error(res)).code).toBe('ATTACHMENT_TOO_LARGE');
    expect(await stored()).toEqual(before);

    await app.db.sql`update village_settings set player_attachment_mb = 1`;
    const { cookie: other } = await app.signIn();
    const { conversationId: theirs } = await setupConversation(app, other);
    expect((await upload(app, other, theirs, 'a.txt', Buffer.alloc(700_000, 'b'))).status).toBe(201);
    const over = await upload(app, other, theirs, 'b.txt', Buffer.alloc(700_000, 'c'));
    expect(over.status).toBe(413);
    expect((await error(over)).code).toBe('ATTACHMENT_QUOTA');
  });

  it('uploads finishing at once cannot each take the last room: the space is counted as each is stored', async () => {
    await app.db.sql`update village_settings set max_attachment_mb = 1, player_attachment_mb = 1`;
    const p = await app.signIn();
    const { conversationId: theirs } = await setupConversation(app, p.cookie);
    // Three at once, each alone within the space, together twice over it.
    const answers = await Promise.all(
      ['d', 'e', 'f'].map((c) => upload(app, p.cookie, theirs, `${c}.txt`, Buffer.alloc(600_000, c))),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 413, 413]);
    for (const a of answers.filter((r) => r.status === 413))
      expect((await error(a)).code).toBe('ATTACHMENT_QUOTA');
    const [row] = await app.db.sql<{ n: number }[]>`
      select coalesce(sum(size), 0)::int as n from attachments where player_id = ${p.playerId}`;
    expect(row!.n).toBe(600_000);
  });
});

describe('chunks', () => {
  it('bytes cut into chunks at any boundary and sent in any pieces come back byte for byte', async () => {
    const { CHUNK_BYTES } = await import('../../src/attachments/blobs.ts');
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 2 * CHUNK_BYTES + 7, 5000),
        fc.array(fc.integer({ min: 1, max: 300_000 }), { minLength: 1, maxLength: 8 }),
        async (size, pieces) => {
          const bytes = Buffer.concat([png(), randomBytes(size)]);
          const body = new ReadableStream<Uint8Array>({
            start(c) {
              let at = 0;
              for (const n of pieces) {
                c.enqueue(bytes.subarray(at, at + n));
                at += n;
              }
              if (at < bytes.length) c.enqueue(bytes.subarray(at));
              c.close();
            },
          });
          const res = await upload(app, cookie, conversationId, 'noise.png', body);
          expect(res.status).toBe(201);
          const { id } = (await res.json()) as { id: string };
          const got = Buffer.from(await (await app.api(`/api/attachments/${id}`, { cookie })).arrayBuffer());
          expect(got.equals(bytes)).toBe(true);
        },
      ),
      { numRuns: 6 },
    );
  });
});

describe('whose it is', () => {
  it('another Player’s attachment is not found: not downloaded, sent, deleted or uploaded to', async () => {
    const mine = (await (await upload(app, cookie, conversationId, 'p.png', png())).json()) as { id: string };
    const { cookie: other } = await app.signIn();
    const { conversationId: theirs } = await setupConversation(app, other);
    expect((await app.api(`/api/attachments/${mine.id}`, { cookie: other })).status).toBe(404);
    expect((await app.api(`/api/attachments/${mine.id}`, { method: 'DELETE', cookie: other })).status).toBe(
      404,
    );
    const send = await app.api(`/api/conversations/${theirs}/messages`, {
      cookie: other,
      body: { text: 'look', attachments: [mine.id] },
    });
    expect(send.status).toBe(400);
    expect((await error(send)).code).toBe('ATTACHMENT_NOT_FOUND');
    expect((await upload(app, other, conversationId, 'x.png', png())).status).toBe(404);
    const page = await app.api(`/api/conversations/${conversationId}/attachments/url`, {
      cookie: other,
      body: { url: 'https://example.com/' },
    });
    expect(page.status).toBe(404);
    expect((await app.api('/api/attachments/not-a-uuid', { cookie })).status).toBe(404);
    // Still the owner's.
    expect((await app.api(`/api/attachments/${mine.id}`, { cookie })).status).toBe(200);
  });
});

describe('sending', () => {
  it('a Message carries its attachments as Parts after its text; sent ones cannot be sent again or removed', async () => {
    const a = (await (await upload(app, cookie, conversationId, 'a.png', png())).json()) as { id: string };
    const b = (await (await upload(app, cookie, conversationId, 'b.txt', Buffer.from('bee'))).json()) as {
      id: string;
    };
    const res = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: '  Look at these  ', attachments: [a.id, b.id] },
    });
    expect(res.status).toBe(200);
    await collectFrames(res);
    const [player] = await messages(app, cookie, conversationId);
    expect(player!.parts).toEqual([
      { type: 'text', text: 'Look at these' },
      expect.objectContaining({ type: 'file', id: a.id, name: 'a.png' }),
      expect.objectContaining({ type: 'file', id: b.id, name: 'b.txt' }),
    ]);
    expect(player!.text).toBe('Look at these');
    const again = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'again', attachments: [a.id] },
    });
    expect((await error(again)).code).toBe('ATTACHMENT_NOT_FOUND');
    const removed = await app.api(`/api/attachments/${a.id}`, { method: 'DELETE', cookie });
    expect(removed.status).toBe(409);
  });

  it('a Message of attachments alone is titled by the first; too many are refused whole', async () => {
    const one = (await (await upload(app, cookie, conversationId, 'map.png', png())).json()) as {
      id: string;
    };
    const res = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { attachments: [one.id] },
    });
    await collectFrames(res);
    const conversation = (await (
      await app.api(`/api/conversations/${conversationId}`, { cookie })
    ).json()) as {
      conversation: { title: string };
    };
    expect(conversation.conversation.title).toBe('map.png');

    await app.db.sql`update village_settings set max_attachments_per_message = 1`;
    const ids = [];
    for (const n of ['x.png', 'y.png'])
      ids.push(
        ((await (await upload(app, cookie, conversationId, n, png(2, 2))).json()) as { id: string }).id,
      );
    const before = (await messages(app, cookie, conversationId)).length;
    const refused = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'two', attachments: ids },
    });
    expect(refused.status).toBe(400);
    expect((await error(refused)).code).toBe('TOO_MANY_ATTACHMENTS');
    expect((await messages(app, cookie, conversationId)).length).toBe(before);
    // Both still wait to be sent (and can be removed).
    expect((await app.api(`/api/attachments/${ids[0]}`, { method: 'DELETE', cookie })).status).toBe(204);
    const empty = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: '  ' },
    });
    expect((await error(empty)).code).toBe('INVALID_BODY');
  });
});

describe('deleting', () => {
  it('bytes nothing uses any more are swept an hour on, a batch at a time; bytes in use never', async () => {
    const { sweepOrphans } = await import('../../src/attachments/index.ts');
    const used = (await (await upload(app, cookie, conversationId, 'u.png', png(9, 9))).json()) as {
      id: string;
    };
    await app.db.sql`update blobs set created_at = now() - interval '2 hours'`;
    const [orphan] = await app.db.sql<{ id: string }[]>`
      insert into blobs (sha256, size, created_at) values (${randomBytes(32)}, 3, now() - interval '2 hours')
      returning id`;
    await app.db
      .sql`insert into blob_chunks (blob_id, idx, data) values (${orphan!.id}, 0, ${Buffer.from('abc')})`;
    const [young] = await app.db.sql<{ id: string }[]>`
      insert into blobs (sha256, size) values (${randomBytes(32)}, 0) returning id`;
    expect(await sweepOrphans(app.db.sql)).toBeGreaterThanOrEqual(1);
    const left = await app.db.sql<
      { id: string }[]
    >`select id from blobs where id in (${orphan!.id}, ${young!.id})`;
    expect(left.map((r) => r.id)).toEqual([young!.id]);
    expect((await app.api(`/api/attachments/${used.id}`, { cookie })).status).toBe(200);
  });

  it("bytes a sandbox file or an NPC's avatar uses are never collected or swept", async () => {
    const { collectBlobs, sweepOrphans } = await import('../../src/attachments/index.ts');
    const blob = async () => {
      const [row] = await app.db.sql<{ id: string }[]>`
        insert into blobs (sha256, size, created_at) values (${randomBytes(32)}, 0, now() - interval '2 hours')
        returning id`;
      return row!.id;
    };
    const [inSandbox, asAvatar] = [await blob(), await blob()];
    await app.db.sql`insert into sandbox_files (conversation_id, path, blob_id)
      values (${conversationId}, 'kept.txt', ${inSandbox})`;
    const [npc] = await app.db.sql<{ id: string }[]>`
      update npcs set avatar_blob_id = ${asAvatar}
      where id = (select id from npcs where avatar_blob_id is null limit 1) returning id`;
    expect(npc).toBeDefined();
    expect(await collectBlobs(app.db.sql, [inSandbox, asAvatar])).toBe(0);
    await sweepOrphans(app.db.sql, 10_000);
    expect(await app.db.sql`select 1 from blobs where id in (${inSandbox}, ${asAvatar})`).toHaveLength(2);
    // Once nothing refers to them, they go.
    await app.db.sql`delete from sandbox_files where blob_id = ${inSandbox}`;
    await app.db.sql`update npcs set avatar_blob_id = null where id = ${npc!.id}`;
    expect(await collectBlobs(app.db.sql, [inSandbox, asAvatar])).toBe(2);
  });

  it('deleting a Conversation deletes the bytes no other attachment uses', async () => {
    const shared = png(3, 3, [1, 2, 3]);
    const own = Buffer.from(`only here ${Date.now()}`);
    const { conversationId: other } = await setupConversation(app, cookie);
    for (const [c, name, bytes] of [
      [conversationId, 's.png', shared],
      [conversationId, 'own.txt', own],
      [other, 's.png', shared],
    ] as const)
      expect((await upload(app, cookie, c, name, bytes)).status).toBe(201);
    expect(await blobsWithHash(own)).toBe(1);
    expect((await app.api(`/api/conversations/${conversationId}`, { method: 'DELETE', cookie })).status).toBe(
      204,
    );
    expect(await blobsWithHash(own)).toBe(0);
    expect(await blobsWithHash(shared)).toBe(1);
    expect((await app.api(`/api/conversations/${other}`, { method: 'DELETE', cookie })).status).toBe(204);
    expect(await blobsWithHash(shared)).toBe(0);
    // No chunk is left without its blob.
    const [orphans] = await app.db.sql<{ n: number }[]>`
      select count(*)::int as n from blob_chunks c where not exists (select 1 from blobs b where b.id = c.blob_id)`;
    expect(orphans!.n).toBe(0);
  });
});

describe('memory', () => {
  it('replies hold at most so many attachment bytes at once; past that, a note until bytes are let go', async () => {
    const { loadAttachments } = await import('../../src/turn/attachments.ts');
    const picture = png(30, 30);
    const part = (await (await upload(app, cookie, conversationId, 'p.png', picture)).json()) as {
      id: string;
      type: 'file';
      name: string;
      mediaType: string;
      size: number;
    };
    const turns = [{ role: 'player' as const, npcName: null, text: 'look', attachments: [part] }];
    const sees = { images: 'supported', pdfs: 'supported' } as const;
    const limit = picture.length * 1.5;
    const first = await loadAttachments(app.db.sql, conversationId, turns, sees, limit);
    expect(first.contents.get(part.id)).toMatchObject({ kind: 'image' });
    const second = await loadAttachments(app.db.sql, conversationId, turns, sees, limit);
    expect(second.contents.get(part.id)).toMatchObject({
      kind: 'note',
      text: expect.stringContaining('too busy'),
    });
    first.release();
    const third = await loadAttachments(app.db.sql, conversationId, turns, sees, limit);
    expect(third.contents.get(part.id)).toMatchObject({ kind: 'image' });
    third.release();
  });
});

describe('across instances and time', () => {
  it('a file uploaded through one server instance is served by another; a stalled upload is cut off with nothing kept', async () => {
    const other = await startTestApp({}, { UPLOAD_TIMEOUT_MS: '400' }, { db: app.db, fake: app.fake });
    try {
      const picture = png(7, 7);
      const { id } = (await (await upload(app, cookie, conversationId, 'p.png', picture)).json()) as {
        id: string;
      };
      const got = await other.api(`/api/attachments/${id}`, { cookie });
      expect(Buffer.from(await got.arrayBuffer())).toEqual(picture);

      const before = await stored();
      // A client that sends the first bytes and then nothing more.
      const stalled = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(Buffer.concat([png(), Buffer.alloc(300_000, 1)]));
        },
      });
      const res = await upload(other, cookie, conversationId, 'slow.png', stalled);
      expect(res.status).toBe(408);
      expect((await error(res)).code).toBe('UPLOAD_TIMEOUT');
      expect(await stored()).toEqual(before);
    } finally {
      await other.close();
    }
  });
});
