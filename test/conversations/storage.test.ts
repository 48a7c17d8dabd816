import { afterAll, beforeAll, expect, it } from 'vitest';
import { migrate, type Sql, transaction } from '../../src/db/index.ts';
import { storageRoom, withMessagesCountedAtEnd } from '../../src/storage/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createDatabaseBefore } from '../support/db.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { upload } from '../support/files.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

// One storage quota per Player over everything the Player can make us store (issue 25 item 5, ADR 0053).
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({}, { TOOL_TIMEOUT_MS: '20000' });
});
afterAll(() => app?.close());

const MB = 1024 * 1024;
interface Storage {
  messages: number;
  attachments: number;
  sandbox: number;
  memory: number;
  used: number;
  quota: number;
}
const storage = async (cookie: string) => {
  const res = await app.api('/api/usage', { cookie });
  expect(res.status).toBe(200);
  return ((await res.json()) as { storage: Storage }).storage;
};

/** What the Player stores, counted afresh from every table: what the running totals must always equal. */
async function recount(sql: Sql, playerId: string) {
  const [row] = await sql<Omit<Storage, 'used' | 'quota'>[]>`
    select
      (select coalesce(sum(octet_length(m.parts::text)), 0)::float8 from messages m
        join conversations c on c.id = m.conversation_id where c.player_id = ${playerId}) as messages,
      (select coalesce(sum(size), 0)::float8 from attachments where player_id = ${playerId}) as attachments,
      (select coalesce(sum(octet_length(f.path) + coalesce(b.size, 0)), 0)::float8 from sandbox_files f
        join conversations c on c.id = f.conversation_id left join blobs b on b.id = f.blob_id
        where c.player_id = ${playerId}) as sandbox,
      (select coalesce(sum(octet_length(text) + coalesce(octet_length(npc_name), 0)), 0)::float8 from memories
        where player_id = ${playerId}) as memory`;
  return row!;
}
const byKind = ({ messages, attachments, sandbox, memory }: Storage) => ({
  messages,
  attachments,
  sandbox,
  memory,
});

/** An export file of one Player Message and one reply of `replyChars` characters. */
function exportFile(replyChars: number, playerText = 'Tell me everything.') {
  const at = new Date().toISOString();
  return JSON.stringify({
    format: 'agentsville.conversation',
    version: 2,
    conversation: { title: 'Imported', createdAt: at },
    npcs: [{ name: 'Ada' }],
    messages: [
      { role: 'player', parts: [{ type: 'text', text: playerText }], status: 'complete', createdAt: at },
      {
        role: 'npc',
        npc: 0,
        npcName: 'Ada',
        parts: [{ type: 'text', text: 'x'.repeat(replyChars) }],
        status: 'complete',
        createdAt: at,
      },
    ],
  });
}
const importFile = (cookie: string, body: string) =>
  fetch(`${app.running.listenUrl}/api/conversations/import`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body,
  });
const conversationCount = async (playerId: string) =>
  Number((await app.db.sql`select count(*) from conversations where player_id = ${playerId}`)[0]!.count);

/** A turn whose reply runs `command` in the sandbox; the tool Part as stored. */
async function runCommand(cookie: string, conversationId: string, command: string) {
  app.fake.enqueue(
    (r: Reply) => {
      r.toolCallStart(0, 'call_bash', 'bash', JSON.stringify({ command }));
      r.finish('tool_calls');
    },
    (r: Reply) => {
      r.text('Done.');
      r.finish();
    },
  );
  const res = await app.api(`/api/conversations/${conversationId}/messages`, {
    cookie,
    body: { text: 'run it' },
  });
  expect(res.status).toBe(200);
  await collectFrames(res);
  const reply = (await messages(app, cookie, conversationId)).at(-1)!;
  return reply.parts.find((p) => (p as { type: string }).type === 'tool') as {
    state: string;
    error?: string;
    output?: { exitCode: number; stderr: string };
  };
}

it('an imported Message longer than the composer takes is refused, naming the Message; nothing is stored', async () => {
  const { cookie, playerId } = await app.signIn();
  const res = await importFile(cookie, exportFile(10, 'y'.repeat(100_001)));
  expect(res.status).toBe(400);
  const { error } = (await res.json()) as { error: { code: string; message: string } };
  expect(error.code).toBe('INVALID_BODY');
  expect(error.message).toMatch(/100,000 characters/);
  expect(error.message).toContain('messages.0.parts');
  expect(await conversationCount(playerId)).toBe(0);
});

it('counts Messages, imports, attachments, sandbox files and Memory against one quota; past it each is refused with STORAGE_FULL, and deleting frees room', async () => {
  await app.db.sql`update village_settings set player_storage_mb = 1`;
  try {
    const { cookie, playerId } = await app.signIn();
    const expectTotalsTrue = async () => {
      const s = await storage(cookie);
      expect(byKind(s)).toEqual(await recount(app.db.sql, playerId));
      expect(s.used).toBe(s.messages + s.attachments + s.sandbox + s.memory);
      expect(s.quota).toBe(MB);
      return s;
    };

    // An import: its Messages are counted.
    const first = await importFile(cookie, exportFile(400_000));
    expect(first.status).toBe(201);
    const firstId = ((await first.json()) as { conversation: { id: string } }).conversation.id;
    let s = await expectTotalsTrue();
    expect(s.messages).toBeGreaterThan(400_000);
    expect(s.messages).toBeLessThan(401_000);

    // An attachment and a Memory.
    const { conversationId, npcIds } = await setupConversation(app, cookie);
    const up = await upload(app, cookie, conversationId, 'notes.txt', Buffer.alloc(300_000, 'a'));
    expect(up.status).toBe(201);
    const memory = await app.api('/api/memories', { cookie, body: { text: 'm'.repeat(1000) } });
    expect(memory.status).toBe(201);
    const memoryId = ((await memory.json()) as { memory: { id: string } }).memory.id;
    s = await expectTotalsTrue();
    expect(s.attachments).toBe(300_000);
    expect(s.memory).toBe(1000);

    // Another import that would pass the quota: refused whole, with the code and what to do.
    const over = await importFile(cookie, exportFile(400_000));
    expect(over.status).toBe(507);
    const { error } = (await over.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('STORAGE_FULL');
    expect(error.message).toMatch(/Delete Conversations, attachments, sandbox files or Memory/);
    expect(await conversationCount(playerId)).toBe(2);
    expect(await expectTotalsTrue()).toEqual(s);

    // An upload that would pass it.
    const big = await upload(app, cookie, conversationId, 'more.txt', Buffer.alloc(400_000, 'b'));
    expect(big.status).toBe(507);
    expect(((await big.json()) as { error: { code: string } }).error.code).toBe('STORAGE_FULL');
    expect(await expectTotalsTrue()).toEqual(s);

    // A sandbox command that writes past the room left is refused before its bytes are kept; a small one is not.
    await app.api(`/api/npcs/${npcIds[0]}/grants`, {
      method: 'PUT',
      cookie,
      body: { grants: [{ kind: 'sandbox' }] },
    });
    const refused = await runCommand(cookie, conversationId, `printf '%*s' 600000 '' > big.txt`);
    expect(JSON.stringify(refused)).toMatch(/storage is full/);
    const small = await runCommand(cookie, conversationId, 'echo hi > small.txt');
    expect(small.output?.exitCode).toBe(0);
    s = await expectTotalsTrue();
    // The refused command's redirect made big.txt before its bytes were refused: it is kept, empty.
    expect(s.sandbox).toBe('small.txt'.length + 3 + 'big.txt'.length);

    // Filled to all but a few KB: a Message that would not leave room is refused before it reaches a Provider…
    const room = s.quota - s.used;
    // What a sandbox may still add: the room left to its Conversation's Player.
    expect(await storageRoom(app.db.sql, playerId)).toBe(room);
    const filler = await importFile(cookie, exportFile(room - 6_000));
    expect(filler.status).toBe(201);
    s = await expectTotalsTrue();
    expect(s.quota - s.used).toBeLessThan(6_000);
    const calls = app.fake.requests.length;
    const turn = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'z'.repeat(6_000) },
    });
    expect(turn.status).toBe(507);
    expect(((await turn.json()) as { error: { code: string } }).error.code).toBe('STORAGE_FULL');
    expect(app.fake.requests.length).toBe(calls);

    // …while a reply already admitted always completes, past the quota if it must: no Provider output is lost.
    app.fake.enqueue((r: Reply) => {
      r.text('w'.repeat(20_000));
      r.finish();
    });
    await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'go' } }),
    );
    const reply = (await messages(app, cookie, conversationId)).at(-1)!;
    expect(reply.status).toBe('complete');
    expect(reply.text).toHaveLength(20_000);
    s = await expectTotalsTrue();
    expect(s.used).toBeGreaterThan(s.quota);
    // Then nothing more comes in: not a turn, not a Memory.
    expect(
      (await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'a' } }))
        .status,
    ).toBe(507);
    expect((await app.api('/api/memories', { cookie, body: { text: 'one more' } })).status).toBe(507);
    // A Memory may be shortened when full, not lengthened.
    const edit = (text: string) =>
      app.api(`/api/memories/${memoryId}`, { method: 'PATCH', cookie, body: { text } });
    expect((await edit('m'.repeat(500))).status).toBe(200);
    expect((await edit('m'.repeat(600))).status).toBe(507);

    // Deleting frees: a Conversation takes its Messages (and the sandbox files of its own) along, a Memory itself.
    expect((await app.api(`/api/conversations/${firstId}`, { method: 'DELETE', cookie })).status).toBe(204);
    expect((await app.api(`/api/memories/${memoryId}`, { method: 'DELETE', cookie })).status).toBe(204);
    const freed = await expectTotalsTrue();
    expect(freed.memory).toBe(0);
    expect(freed.messages).toBeLessThan(s.messages - 400_000);
    expect((await importFile(cookie, exportFile(100_000))).status).toBe(201);
    expect((await app.api(`/api/conversations/${conversationId}`, { method: 'DELETE', cookie })).status).toBe(
      204,
    );
    const left = await expectTotalsTrue();
    expect(left.sandbox).toBe(0);
    expect(left.attachments).toBe(0);
  } finally {
    await app.db.sql`update village_settings set player_storage_mb = 200`;
  }
});

it("an import's Messages leave the Player's storage row free until they are counted, at the end", async () => {
  const { cookie, playerId } = await app.signIn();
  await app.api('/api/memories', { cookie, body: { text: 'a row to lock' } });
  const [c] = await app.db.sql`insert into conversations (player_id) values (${playerId}) returning id`;
  // Whether another transaction (a checkpoint of this Player's reply, say) could take the row now.
  const rowFree = () =>
    transaction(app.db.sql, async (other) => {
      await other`set local lock_timeout = '200ms'`;
      return other`select 1 from player_storage where player_id = ${playerId} for update`.then(
        () => true,
        () => false,
      );
    });
  let freeWhileInserting: boolean | undefined;
  await transaction(app.db.sql, (tx) =>
    withMessagesCountedAtEnd(
      tx,
      playerId,
      tx`(select coalesce(sum(stored_bytes), 0) from messages where conversation_id = ${c!.id})`,
      async () => {
        for (let i = 0; i < 3; i++)
          await tx`insert into messages (conversation_id, role, parts) values (${c!.id}, 'npc', ${tx.json([{ type: 'text', text: 'x'.repeat(1000) }])})`;
        freeWhileInserting = await rowFree();
      },
    ).then(async () => expect(await rowFree()).toBe(false)),
  );
  expect(freeWhileInserting).toBe(true);
  const s = await storage(cookie);
  expect(byKind(s)).toEqual(await recount(app.db.sql, playerId));
  expect(s.messages).toBeGreaterThan(3000);
});

it('the migration counts what every Player already stored', async () => {
  const db = await createDatabaseBefore((f) => f.endsWith('_player_storage.sql'));
  try {
    const [p] = await db.sql`insert into players (did) values ('did:plc:before') returning id`;
    const [c] = await db.sql`insert into conversations (player_id) values (${p!.id}) returning id`;
    await db.sql`insert into messages (conversation_id, role, parts, text) values
      (${c!.id}, 'player', ${db.sql.json([{ type: 'text', text: 'héllo' }])}, 'héllo'),
      (${c!.id}, 'npc', null, 'from before Parts')`;
    const [b] = await db.sql`insert into blobs (sha256, size) values ('\\x01', 1234) returning id`;
    await db.sql`insert into attachments (player_id, conversation_id, blob_id, kind, name, media_type, size, tokens)
      values (${p!.id}, ${c!.id}, ${b!.id}, 'file', 'a.txt', 'text/plain', 1234, 1)`;
    await db.sql`insert into sandbox_files (conversation_id, path, blob_id) values (${c!.id}, 'a.txt', ${b!.id}),
      (${c!.id}, 'dir', null)`;
    await db.sql`insert into memories (player_id, text, npc_name) values (${p!.id}, 'likes tea', 'Ada')`;
    await migrate(db.sql);
    const [row] = await db.sql`select message_bytes::float8 as m, attachment_bytes::float8 as a,
      sandbox_bytes::float8 as s, memory_bytes::float8 as r from player_storage where player_id = ${p!.id}`;
    expect(row).toEqual({
      m: Buffer.byteLength('[{"text": "héllo", "type": "text"}]') + 'from before Parts'.length,
      a: 1234,
      s: 'a.txt'.length + 1234 + 'dir'.length,
      r: 'likes tea'.length + 'Ada'.length,
    });
  } finally {
    await db.drop();
  }
});
