import { afterAll, beforeAll, expect, it } from 'vitest';
import { keepFile, NotKept } from '../../src/attachments/index.ts';
import { MADE_FILES_PER_REPLY } from '../../src/turn/madeFiles.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { askNpc } from '../support/askNpc.ts';
import { picture } from '../support/picture.ts';
import { setupConversation } from '../support/turns.ts';
import { gemini, startWireFake, type WireFake, type WireStep } from '../support/wireFakes.ts';

// Files a Model makes (Gemini's image Models send them as inlineData parts) are the Provider's output too: kept as
// attachments of the reply where they came, or, when the Village's limits refuse one, shown as a file not kept,
// saying why. The real server and the real @ai-sdk/google, against a fake Gemini over HTTP.
let fake: WireFake;
let app: TestApp;
beforeAll(async () => {
  fake = await startWireFake();
  app = await startTestApp(
    {},
    { GOOGLE_GENERATIVE_AI_API_KEY: 'test-key', GOOGLE_BASE_URL: `${fake.origin}/v1beta` },
  );
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

const npc = { provider: 'google', model: 'gemini-2.5-flash-image' };
const usage = { promptTokenCount: 10, candidatesTokenCount: 20 };
const image = (bytes: Uint8Array, mimeType = 'image/png', thought = false) => ({
  inlineData: { mimeType, data: Buffer.from(bytes).toString('base64') },
  ...(thought ? { thought: true } : {}),
});

async function ask(steps: WireStep[], player?: Awaited<ReturnType<TestApp['signIn']>>) {
  const { cookie } = player ?? (await app.signIn());
  fake.enqueue(() => steps);
  return { cookie, ...(await askNpc(app, cookie, npc, fake, { text: 'Draw the harbour.' })) };
}

it('keeps a picture the Model made where it came, as the Player can open it, live and stored alike', async () => {
  const made = picture(17);
  const thought = picture(99);
  const player = await app.signIn();
  // Seen while the reply still streams: the file already belongs to it (a crash now would leave the reply's Parts
  // naming it, and a pending upload is swept when abandoned).
  const seen = (async () => {
    for (let i = 0; i < 500; i++) {
      const [row] = await app.db.sql`select a.message_id, m.status from attachments a
        left join messages m on m.id = a.message_id where a.player_id = ${player.playerId}`;
      if (row) return row;
      await new Promise((r) => setTimeout(r, 20));
    }
    return null;
  })();
  const { cookie, reply, streamed, finish } = await ask(
    [
      gemini.chunk([image(thought, 'image/png', true)], usage),
      { pause: 400 },
      gemini.chunk([gemini.text('Here is the harbour at dawn:')], usage),
      gemini.chunk([image(made)], usage),
      gemini.chunk([gemini.text(' Shall I add boats?')], usage, 'STOP'),
    ],
    player,
  );
  expect(await seen).toEqual({ message_id: reply.id, status: 'streaming' });
  expect(finish?.status).toBe('complete');
  expect(reply.status).toBe('complete');
  const file = (name: string, bytes: Uint8Array) => ({
    type: 'file',
    id: expect.any(String),
    name,
    mediaType: 'image/png',
    size: bytes.byteLength,
    width: 2,
    height: 1,
    tokens: expect.any(Number),
  });
  expect(reply.parts).toEqual([
    // Drawn while it thought: kept, and marked as a draft of its reasoning.
    { ...file('image-1.png', thought), thought: true },
    { type: 'text', text: 'Here is the harbour at dawn:' },
    file('image-2.png', made),
    { type: 'text', text: ' Shall I add boats?' },
  ]);
  // What the browser folded from the frames is what was stored.
  expect(streamed).toEqual(reply.parts);
  // The bytes are the Model's, served to the Player, and belong to the reply (not a pending upload of the composer).
  const id = (reply.parts[2] as { id: string }).id;
  const res = await app.api(`/api/attachments/${id}`, { cookie });
  expect(res.status).toBe(200);
  expect(Buffer.from(await res.arrayBuffer())).toEqual(Buffer.from(made));
  const [row] = await app.db.sql`select message_id from attachments where id = ${id}`;
  expect(row!.message_id).toBe(reply.id);
  // Another Player cannot open it.
  const other = await app.signIn();
  expect((await app.api(`/api/attachments/${id}`, { cookie: other.cookie })).status).toBe(404);
});

it('shows a made file the Village does not keep as a file not kept, saying why, and keeps the rest of the reply', async () => {
  const player = await app.signIn();
  // Bytes that are no kind of file the Village accepts, whatever the Model declared them to be.
  const noise = Uint8Array.from({ length: 600 }, (_, i) => (i * 7 + 3) % 256);
  const { reply, streamed } = await ask(
    [
      gemini.chunk([image(noise, 'image/png')], usage),
      gemini.chunk([image(picture(1), 'image/png; <script>')], usage),
      // Not base64 at all: decoded as far as it goes, it is no kind of file, and the reply goes on.
      gemini.chunk([{ inlineData: { mimeType: 'image/png', data: 'abc$%^' } }], usage),
      gemini.chunk([gemini.text('Done.')], usage, 'STOP'),
    ],
    player,
  );
  expect(reply.status).toBe('complete');
  expect(reply.parts).toEqual([
    {
      type: 'file',
      id: expect.any(String),
      name: 'image-1.png',
      mediaType: 'image/png',
      size: 600,
      missing: true,
      reason: 'It is not a kind of file this Village keeps (unrecognised).',
    },
    // A declared type that is not one is not shown; the bytes decide what is kept.
    expect.objectContaining({ type: 'file', name: 'file-2.bin', mediaType: 'image/png', width: 2 }),
    expect.objectContaining({
      name: 'image-3.png',
      missing: true,
      reason: expect.stringContaining('not a kind'),
    }),
    { type: 'text', text: 'Done.' },
  ]);
  expect(streamed).toEqual(reply.parts);
  expect(
    (await app.db.sql`select count(*)::int as n from attachments where message_id = ${reply.id}`)[0]!.n,
  ).toBe(1);
});

it('keeps at most the Village size and the reply count of made files; past them, each is shown not kept', async () => {
  await app.db.sql`update village_settings set max_attachment_mb = 1`;
  try {
    const big = new Uint8Array(1024 * 1024 + 1);
    big.set(picture(5));
    const many = Array.from({ length: MADE_FILES_PER_REPLY + 1 }, (_, i) => image(picture(i + 20)));
    const { reply } = await ask([
      gemini.chunk([image(big)], usage),
      gemini.chunk(many.slice(0, MADE_FILES_PER_REPLY - 1), usage),
      gemini.chunk(many.slice(MADE_FILES_PER_REPLY - 1), usage, 'STOP'),
    ]);
    const files = reply.parts as { name: string; missing?: true; reason?: string }[];
    expect(files).toHaveLength(MADE_FILES_PER_REPLY + 2);
    expect(files[0]).toMatchObject({
      missing: true,
      reason: 'It is larger than this Village allows (1 MB).',
    });
    // The big one counted: the tenth made file is the last kept.
    expect(files.slice(1, MADE_FILES_PER_REPLY).every((f) => !f.missing)).toBe(true);
    for (const f of files.slice(MADE_FILES_PER_REPLY))
      expect(f).toMatchObject({
        missing: true,
        reason: `A reply keeps at most ${MADE_FILES_PER_REPLY} files its Model made.`,
      });
  } finally {
    await app.db.sql`update village_settings set max_attachment_mb = 20`;
  }
});

it("shows a made file not kept when the Player's attachment space is full", async () => {
  await app.db.sql`update village_settings set player_attachment_mb = 1`;
  const player = await app.signIn();
  try {
    const nearlyFull = new Uint8Array(1024 * 1024 - 10);
    nearlyFull.set(picture(7));
    const { reply } = await ask(
      [gemini.chunk([image(nearlyFull), image(picture(8))], usage, 'STOP')],
      player,
    );
    expect(reply.parts).toMatchObject([
      { name: 'image-1.png', width: 2 },
      { name: 'image-2.png', missing: true, reason: expect.stringContaining('attachment space is full') },
    ]);
  } finally {
    await app.db.sql`update village_settings set player_attachment_mb = 1024`;
  }
});

it("keeps one of two files racing for the Player's last room: the other is not kept, saying why", async () => {
  const { playerId, cookie } = await app.signIn();
  const { conversationId } = await setupConversation(app, cookie, [{ name: 'Iris' }]);
  const file = (blue: number) => {
    const bytes = new Uint8Array(600 * 1024);
    bytes.set(picture(blue));
    return { name: `p${blue}.png`, size: bytes.byteLength, head: bytes.subarray(0, 4100), bytes: [bytes] };
  };
  const limits = { maxBytes: 1024 * 1024, types: ['image/png'], playerBytes: 1024 * 1024 };
  // Both pass the early look at the Player's space (nothing stored yet); the count under the lock decides.
  const both = await Promise.allSettled(
    [1, 2].map((blue) => keepFile(app.db.sql, { playerId, conversationId }, file(blue), limits)),
  );
  expect(both.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  const refused = both.find((r) => r.status === 'rejected') as PromiseRejectedResult;
  expect(refused.reason).toBeInstanceOf(NotKept);
  expect(refused.reason.message).toBe("The Player's attachment space is full.");
});
