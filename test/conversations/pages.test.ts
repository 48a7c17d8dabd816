import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';

// Transcript pages are bounded in bytes as well as in Messages, and rationed per Player (issue 25 item 5).
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

interface Page {
  messages: { id: string; seq: string }[];
  before: string | null;
}

/** A Conversation of one path whose Messages hold these many characters, oldest first; their ids and sizes. */
async function conversationOf(playerId: string, sizes: number[]) {
  const sql = app.db.sql;
  const [c] = await sql`insert into conversations (player_id) values (${playerId}) returning id`;
  const made: { id: string; bytes: number }[] = [];
  for (const [i, n] of sizes.entries()) {
    const [m] = await sql<{ id: string; bytes: number }[]>`
      insert into messages (conversation_id, role, parts, text, parent_id)
      values (${c!.id}, ${i % 2 ? 'npc' : 'player'}, ${sql.json([{ type: 'text', text: 'é'.repeat(n) }])},
        ${'é'.repeat(n)}, ${made.at(-1)?.id ?? null})
      returning id, stored_bytes as bytes`;
    made.push(m!);
  }
  return { conversationId: c!.id as string, made };
}

it('a page stops at its byte budget and its cursor leads on: every Message is read exactly once, in order', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: 24 }),
      fc.integer({ min: 1, max: 8 }),
      fc.integer({ min: 1024, max: 8192 }),
      async (sizes, limit, maxBytes) => {
        // A Player of its own per run: the page reads stay inside the per-Player rate.
        const { cookie, playerId } = await app.signIn();
        const { conversationId, made } = await conversationOf(playerId, sizes);
        const bytes = new Map(made.map((m) => [m.id, m.bytes]));
        const read: string[][] = [];
        let before: string | null | undefined;
        do {
          const q = `limit=${limit}&maxBytes=${maxBytes}${before ? `&before=${before}` : ''}`;
          const res = await app.api(`/api/conversations/${conversationId}/messages?${q}`, { cookie });
          expect(res.status).toBe(200);
          const page = (await res.json()) as Page;
          const ids = page.messages.map((m) => m.id);
          // Within both bounds: the Messages after the page's first (oldest) take less than the budget…
          expect(ids.length).toBeLessThanOrEqual(limit);
          const sum = (xs: string[]) => xs.reduce((n, id) => n + bytes.get(id)!, 0);
          if (ids.length > 1) expect(sum(ids.slice(1))).toBeLessThan(maxBytes);
          // …and a page ended early by the budget could not have taken one more.
          if (page.before !== null && ids.length < limit) expect(sum(ids)).toBeGreaterThanOrEqual(maxBytes);
          if (page.before !== null) expect(page.before).toBe(page.messages[0]!.seq);
          read.unshift(ids);
          before = page.before;
        } while (before);
        expect(read.flat()).toEqual(made.map((m) => m.id));
      },
    ),
    { numRuns: 25 },
  );
}, 240_000);

it('a page of long Messages is cut by the server budget whatever limit is asked; one too long comes alone', async () => {
  const { cookie, playerId } = await app.signIn();
  // Six Messages of 400,000 two-byte characters: 4.8 MB, where limit=200 once sent them all.
  const { conversationId, made } = await conversationOf(playerId, Array(6).fill(400_000));
  const res = await app.api(`/api/conversations/${conversationId}/messages?limit=200`, { cookie });
  const page = (await res.json()) as Page;
  expect(page.messages.map((m) => m.id)).toEqual(made.slice(-2).map((m) => m.id));
  expect(page.before).toBe(page.messages[0]!.seq);
  // A budget above the server's is refused, not taken.
  const more = await app.api(`/api/conversations/${conversationId}/messages?maxBytes=999999999`, { cookie });
  expect(more.status).toBe(400);
  // One Message larger than the budget is still read, alone, and the cursor leads on past it.
  const { conversationId: huge, made: two } = await conversationOf(playerId, [10, 700_000]);
  const first = (await (await app.api(`/api/conversations/${huge}/messages`, { cookie })).json()) as Page;
  expect(first.messages.map((m) => m.id)).toEqual([two[1]!.id]);
  const rest = (await (
    await app.api(`/api/conversations/${huge}/messages?before=${first.before}`, { cookie })
  ).json()) as Page;
  expect(rest.messages.map((m) => m.id)).toEqual([two[0]!.id]);
  expect(rest.before).toBeNull();
});

it('transcript pages are rationed per Player: 120 a minute, then 429 RATE_LIMITED; another Player reads on', async () => {
  const { cookie, playerId } = await app.signIn();
  const { conversationId } = await conversationOf(playerId, [10]);
  for (let i = 0; i < 120; i++) {
    const path =
      i % 2 ? `/api/conversations/${conversationId}` : `/api/conversations/${conversationId}/messages`;
    expect((await app.api(path, { cookie })).status).toBe(200);
  }
  const refused = await app.api(`/api/conversations/${conversationId}/messages`, { cookie });
  expect(refused.status).toBe(429);
  expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMITED');
  const other = await app.signIn();
  const { conversationId: theirs } = await conversationOf(other.playerId, [10]);
  expect((await app.api(`/api/conversations/${theirs}/messages`, { cookie: other.cookie })).status).toBe(200);
});
