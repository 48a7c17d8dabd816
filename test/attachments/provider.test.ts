import { mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_READING_PER_PLAYER, readingNow } from '../../src/attachments/page.ts';
import { foldParts } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { pdf, png, upload } from '../support/files.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';
import { anthropic, openai, openaiStream, startWireFake, type WireFake } from '../support/wireFakes.ts';

// What the Provider receives for each kind of attachment, in its real wire format, through the real server and
// the real AI SDK providers; pages fetched from a real HTTP server; a file an NPC shares from its sandbox.
const CLAUDE = 'claude-sonnet-4-20250514';
let fake: WireFake;
let app: TestApp;
let cookie: string;
let site: http.Server;
let siteUrl: string;
const siteHits: string[] = [];

beforeAll(async () => {
  fake = await startWireFake();
  app = await startTestApp(
    {},
    {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: `${fake.origin}/v1`,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: `${fake.origin}/v1`,
      // The page server here is on loopback.
      ALLOW_PRIVATE_PAGE_URLS: 'true',
    },
  );
  ({ cookie } = await app.signIn());
  site = http.createServer((req, res) => {
    siteHits.push(req.url ?? '');
    if (req.url === '/article') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html><head><title>Tide &amp; Moon</title><script>var secret = "SCRIPT-BODY";</script>
        <style>.x{color:red}</style></head><body><nav>Home | About NAV-LINKS</nav>
        <article><h1>Spring tides</h1><p>At <b>full moon</b> the tide runs highest.</p></article>
        <footer>FOOTER-TEXT</footer></body></html>`);
    } else if (req.url?.startsWith('/long')) {
      // Slow to turn into text: a large table.
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        `<html><body><table>${'<tr><td>cell</td><td>more</td></tr>'.repeat(20_000)}</table></body></html>`,
      );
    } else if (req.url === '/image') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(png());
    } else {
      res.writeHead(404).end('gone');
    }
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
  site?.closeAllConnections();
  await new Promise((r) => site?.close(r));
});

const json = async <T>(res: Response) => (await res.json()) as T;
const claudeAnswer = () => [
  ...anthropic.messageStart(CLAUDE, { input_tokens: 9 }),
  ...anthropic.text(0, ['I see ', 'them.']),
  ...anthropic.finish('end_turn', { output_tokens: 3 }),
];

describe('pages', () => {
  it('are turned into text two at a time for one Player, the rest waiting their turn, none refused', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    let most = 0;
    let polling = true;
    const poll = (async () => {
      while (polling) {
        most = Math.max(most, readingNow());
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        app.api(`/api/conversations/${conversationId}/attachments/url`, {
          cookie,
          body: { url: `${siteUrl}/long?${i}` },
        }),
      ),
    );
    polling = false;
    await poll;
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201, 201, 201]);
    expect(most).toBe(MAX_READING_PER_PLAYER);
  }, 90_000);

  it('attaches a page as its readable text (no scripts, navigation or footer), fetched once an hour', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    const res = await app.api(`/api/conversations/${conversationId}/attachments/url`, {
      cookie,
      body: { url: `${siteUrl}/article` },
    });
    expect(res.status).toBe(201);
    const part = await json<{ id: string; title: string; type: string }>(res);
    expect(part).toMatchObject({ type: 'url', url: `${siteUrl}/article`, title: 'Tide & Moon' });
    const text = await (await app.api(`/api/attachments/${part.id}`, { cookie })).text();
    expect(text).toContain('At full moon the tide runs highest.');
    expect(text.toLowerCase()).toContain('spring tides');
    for (const hidden of ['SCRIPT-BODY', 'NAV-LINKS', 'FOOTER-TEXT', 'color:red', '<'])
      expect(text).not.toContain(hidden);
    const hits = siteHits.length;
    const again = await app.api(`/api/conversations/${conversationId}/attachments/url`, {
      cookie,
      body: { url: `${siteUrl}/article` },
    });
    expect(again.status).toBe(201);
    expect(siteHits.length).toBe(hits);
  });

  it('refuses what is not a page, a page that is not there, and an address that is not public', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    const attach = (url: string, on = app) =>
      on.api(`/api/conversations/${conversationId}/attachments/url`, { cookie, body: { url } });
    const picture = await attach(`${siteUrl}/image`);
    expect(picture.status).toBe(415);
    expect((await json<{ error: { code: string } }>(picture)).error.code).toBe('PAGE_NOT_TEXT');
    const missing = await attach(`${siteUrl}/missing`);
    expect(missing.status).toBe(502);
    expect((await json<{ error: { code: string; message: string } }>(missing)).error).toMatchObject({
      code: 'PAGE_UNREACHABLE',
      message: expect.stringContaining('404'),
    });
    expect((await attach('file:///etc/passwd')).status).toBe(400);
    // An instance that does not allow private addresses (the default) never fetches one.
    const strict = await startTestApp(
      {},
      { ALLOW_PRIVATE_TOOL_URLS: 'false' },
      { db: app.db, fake: app.fake },
    );
    try {
      const hits = siteHits.length;
      const refused = await attach(`${siteUrl}/article`, strict);
      expect(refused.status).toBe(400);
      expect((await json<{ error: { code: string } }>(refused)).error.code).toBe('URL_NOT_ALLOWED');
      const v6 = await attach('http://[::ffff:127.0.0.1]:1/', strict);
      expect(v6.status).toBe(400);
      expect(siteHits.length).toBe(hits);
    } finally {
      await strict.close();
    }
  });
});

describe('what the Provider receives', () => {
  it('Anthropic: the picture and the PDF as base64 blocks, the text file and the page as text, after the Message', async () => {
    const { conversationId } = await setupConversation(app, cookie, [
      { name: 'Vera', provider: 'anthropic', model: CLAUDE },
    ]);
    const picture = png(6, 6);
    const doc = pdf(2);
    const ids: string[] = [];
    for (const [name, bytes] of [
      ['boat.png', picture],
      ['chart.pdf', doc],
      ['log.txt', Buffer.from('Day 1: calm seas.')],
    ] as const)
      ids.push((await json<{ id: string }>(await upload(app, cookie, conversationId, name, bytes))).id);
    const page = await json<{ id: string }>(
      await app.api(`/api/conversations/${conversationId}/attachments/url`, {
        cookie,
        body: { url: `${siteUrl}/article` },
      }),
    );
    ids.push(page.id);
    fake.enqueue(claudeAnswer);
    const res = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Compare these', attachments: ids },
    });
    const frames = await collectFrames(res);
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
    const content = (fake.requests.at(-1)!.body.messages as { role: string; content: unknown[] }[]).at(-1)!
      .content as Record<string, unknown>[];
    expect(content[0]).toMatchObject({ type: 'text', text: 'Compare these' });
    expect(content).toContainEqual(
      expect.objectContaining({
        type: 'image',
        source: { type: 'base64', media_type: 'image/png', data: picture.toString('base64') },
      }),
    );
    expect(content).toContainEqual(
      expect.objectContaining({
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: doc.toString('base64') },
      }),
    );
    const texts = content.filter((c) => c.type === 'text').map((c) => c.text as string);
    expect(texts.some((t) => t.includes('log.txt') && t.includes('Day 1: calm seas.'))).toBe(true);
    expect(
      texts.some((t) => t.includes('Tide & Moon') && t.includes('At full moon the tide runs highest.')),
    ).toBe(true);
    // In the order attached: the picture, the PDF, the file, the page.
    const order = content.map((c) => c.type);
    expect(order.indexOf('image')).toBeLessThan(order.indexOf('document'));

    // Reload equals stream: the stored Player Message is what the web app showed, Parts in the same order.
    const [player, reply] = await messages(app, cookie, conversationId);
    expect(player!.parts.map((p) => (p as { id?: string }).id ?? (p as { type: string }).type)).toEqual([
      'text',
      ...ids,
    ]);
    expect(reply!.parts).toEqual(foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : []))));

    // The next turn sends the attachments again (they are in the window), counted in the window.
    fake.enqueue(claudeAnswer);
    await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'And now?' } }),
    );
    const history = fake.requests.at(-1)!.body.messages as { content: unknown[] }[];
    expect(JSON.stringify(history[0])).toContain(picture.toString('base64'));
  });

  it('a Model that cannot read pictures gets a note saying one was attached, not the picture', async () => {
    const { conversationId } = await setupConversation(app, cookie, [
      { name: 'Olde', provider: 'openai', model: 'gpt-3.5-turbo' },
    ]);
    const picture = png(5, 5);
    const { id } = await json<{ id: string }>(await upload(app, cookie, conversationId, 'boat.png', picture));
    fake.enqueue(() =>
      openaiStream(
        openai.created('gpt-3.5-turbo'),
        openai.message(0, 'msg_1', ['A boat, you say.']),
        openai.completed('gpt-3.5-turbo', { input_tokens: 5, output_tokens: 4 }),
      ),
    );
    await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: 'Here', attachments: [id] },
      }),
    );
    const sent = JSON.stringify(fake.requests.at(-1)!.body);
    expect(sent).not.toContain(picture.toString('base64'));
    expect(sent).toContain('The Player attached boat.png (image/png), but this Model cannot read images.');
    // The composer is told the same before sending.
    const info = await json<{ images: string }>(
      await app.api('/api/models?provider=openai&model=gpt-3.5-turbo', { cookie }),
    );
    expect(info.images).toBe('unsupported');
    expect(
      await json<{ images: string; pdfs: string }>(
        await app.api(`/api/models?provider=anthropic&model=${CLAUDE}`, { cookie }),
      ),
    ).toMatchObject({ images: 'supported', pdfs: 'supported' });
  });
});

describe('files an NPC shares', () => {
  it('a sandbox file shared with share_file is a file Part the Player can download; it goes with the Conversation', async () => {
    const { conversationId, npcIds } = await setupConversation(app, cookie);
    await app.api(`/api/npcs/${npcIds[0]}/grants`, {
      method: 'PUT',
      cookie,
      body: { grants: [{ kind: 'sandbox' }] },
    });
    const folder = path.join(app.dataDir, 'sandboxes', conversationId);
    await mkdir(folder, { recursive: true });
    const csv = Buffer.from('tide,height\nhigh,4.2\n');
    await writeFile(path.join(folder, 'tides.csv'), csv);
    app.fake.enqueue(
      (r) => {
        r.toolCallStart(0, 'call_share', 'share_file', JSON.stringify({ path: '/home/npc/tides.csv' }));
        r.finish('tool_calls');
      },
      (r) => {
        r.text('Here is the table.');
        r.finish();
      },
    );
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: 'Table please' },
      }),
    );
    const streamed = foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])));
    const [, reply] = await messages(app, cookie, conversationId);
    expect(reply!.parts).toEqual(streamed);
    const file = streamed.find((p) => p.type === 'file');
    expect(file).toMatchObject({ name: 'tides.csv', mediaType: 'text/csv', size: csv.length });
    // After its call, before the text.
    expect(streamed.map((p) => p.type)).toEqual(['tool', 'file', 'text']);
    const got = await app.api(`/api/attachments/${file!.type === 'file' ? file!.id : ''}`, { cookie });
    expect(Buffer.from(await got.arrayBuffer())).toEqual(csv);
    expect(got.headers.get('content-disposition')).toMatch(/^attachment; filename="tides.csv"/);
    const [row] = await app.db.sql<
      { message_id: string }[]
    >`select message_id from attachments where id = ${file!.type === 'file' ? file!.id : ''}`;
    expect(row!.message_id).toBe(reply!.id);

    // A path out of the sandbox is refused as a failed call, and nothing is shared.
    app.fake.enqueue(
      (r) => {
        r.toolCallStart(0, 'call_escape', 'share_file', JSON.stringify({ path: '../../../etc/passwd' }));
        r.finish('tool_calls');
      },
      (r) => {
        r.text('No.');
        r.finish();
      },
    );
    const regen = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/regenerate`, { cookie, body: {} }),
    );
    const parts = foldParts(regen.flatMap((f) => (f.type === 'part' ? [f.part] : [])));
    expect(parts[0]).toMatchObject({
      type: 'tool',
      state: 'failed',
      error: expect.stringContaining('not a file in your sandbox'),
    });
    expect(parts.some((p) => p.type === 'file')).toBe(false);
    // Sharing counts against the Player's attachment space like an upload.
    expect(
      (await upload(app, cookie, conversationId, 'filler.txt', Buffer.alloc(1024 * 1024 - 10, 'f'))).status,
    ).toBe(201);
    await app.db.sql`update village_settings set player_attachment_mb = 1`;
    app.fake.enqueue(
      (r) => {
        r.toolCallStart(0, 'call_full', 'share_file', JSON.stringify({ path: 'tides.csv' }));
        r.finish('tool_calls');
      },
      (r) => {
        r.text('Full.');
        r.finish();
      },
    );
    const { conversationId: second, npcIds: secondNpc } = await setupConversation(app, cookie);
    await app.api(`/api/npcs/${secondNpc[0]}/grants`, {
      method: 'PUT',
      cookie,
      body: { grants: [{ kind: 'sandbox' }] },
    });
    await mkdir(path.join(app.dataDir, 'sandboxes', second), { recursive: true });
    await writeFile(path.join(app.dataDir, 'sandboxes', second, 'tides.csv'), csv);
    const fullFrames = await collectFrames(
      await app.api(`/api/conversations/${second}/messages`, { cookie, body: { text: 'Again' } }),
    );
    await app.db.sql`update village_settings set player_attachment_mb = default`;
    expect(foldParts(fullFrames.flatMap((f) => (f.type === 'part' ? [f.part] : [])))[0]).toMatchObject({
      type: 'tool',
      state: 'failed',
      error: expect.stringContaining('attachment space is full'),
    });

    // Regenerating keeps the earlier reply as a sibling (ADR 0042), and its file with it, still downloadable.
    // Deleting the Conversations takes the file, and the bytes once nothing else (the sandbox's own tides.csv,
    // stored in PostgreSQL too) holds the same content.
    const uses = async () => {
      const [row] = await app.db.sql<{ blobs: number; attachments: number; files: number }[]>`
        select count(*)::int as blobs,
          (select count(*)::int from attachments a where a.blob_id = any(array_agg(b.id))) as attachments,
          (select count(*)::int from sandbox_files f where f.blob_id = any(array_agg(b.id))) as files
        from blobs b where b.sha256 = sha256(${csv})`;
      return row!;
    };
    expect(await uses()).toMatchObject({ blobs: 1, attachments: 1 });
    expect(
      (await app.api(`/api/attachments/${file!.type === 'file' ? file!.id : ''}`, { cookie })).status,
    ).toBe(200);
    expect((await uses()).files).toBeGreaterThan(0);
    for (const c of [conversationId, second])
      expect((await app.api(`/api/conversations/${c}`, { method: 'DELETE', cookie })).status).toBe(204);
    expect((await uses()).blobs).toBe(0);
    expect(
      (await app.api(`/api/attachments/${file!.type === 'file' ? file!.id : ''}`, { cookie })).status,
    ).toBe(404);
  });
});
