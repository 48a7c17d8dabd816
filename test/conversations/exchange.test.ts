import http from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

// Export a Conversation as JSON (lossless) and Markdown (readable); import the JSON back (issue 18).
let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

type Export = {
  format: string;
  version: number;
  exportedAt: string;
  conversation: { title: string | null; createdAt: string };
  npcs: { name: string; jobTitle: string; prompt: string }[];
  messages: {
    id: string;
    parentId: string | null;
    onPath: boolean;
    parts: { type: string; id?: string }[];
    createdAt: string;
    usage: unknown;
    npc: number | null;
  }[];
};
const exportOf = async (id: string, as = cookie) => {
  const res = await app.api(`/api/conversations/${id}/export`, { cookie: as });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-disposition')).toMatch(/^attachment/);
  return (await res.json()) as Export;
};
const importFile = (body: string | Uint8Array, as = cookie) =>
  fetch(`${app.running.listenUrl}/api/conversations/import`, {
    method: 'POST',
    headers: { cookie: as, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body,
  });
/** What must survive a round trip: everything but this instance's ids and the moment of export. */
const comparable = (e: Export) => ({
  ...e,
  exportedAt: undefined,
  messages: e.messages.map((m) => ({
    ...m,
    id: undefined,
    // The tree, by place in the file rather than by this instance's ids.
    parentId: m.parentId === null ? null : e.messages.findIndex((p) => p.id === m.parentId),
    // An imported attachment is marked as not here (`missing`): apart from that and its id, the same.
    parts: m.parts.map((p) =>
      p.type === 'file' || p.type === 'url' ? { ...p, id: undefined, missing: undefined } : p,
    ),
  })),
});

async function richConversation() {
  const { conversationId } = await setupConversation(app, cookie, [
    { name: 'Ada', jobTitle: 'Librarian', prompt: 'Be brief.' },
  ]);
  app.fake.enqueue((r) => {
    r.reasoning('Thinking about shelves.');
    r.text('The third shelf.');
    r.finish('stop', { prompt_tokens: 11, completion_tokens: 7 });
  });
  await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Where is *Dune*?' },
    }),
  );
  // A tool step, a failure, a file and a page, as the turn would have stored them.
  await app.db
    .sql`insert into messages (conversation_id, role, npc_name, parts, text, status, error, parent_id) values
    (${conversationId}, 'npc', 'Ada', ${app.db.sql.json([
      { type: 'tool', id: 'c1', name: 'bash', input: { command: 'ls' }, state: 'done', output: 'a.txt' },
      { type: 'file', id: crypto.randomUUID(), name: 'a.txt', mediaType: 'text/plain', size: 5, tokens: 2 },
      { type: 'url', id: crypto.randomUUID(), url: 'https://example.com/', title: 'Example', size: 10 },
    ])}, '', 'failed', 'The Provider refused.',
    (select id from messages where conversation_id = ${conversationId} order by seq desc limit 1))`;
  await app.db.sql`update conversations set title = 'Shelves' where id = ${conversationId}`;
  return conversationId;
}

it('JSON export → import → export gives the same file; the NPCs are the Player’s own, Usage unchanged', async () => {
  const id = await richConversation();
  // The tokens paid for (the storage the import takes is counted: see storage.test.ts).
  const usage = async () => {
    const { points, totals } = (await (await app.api('/api/usage', { cookie })).json()) as Record<
      string,
      unknown
    >;
    return { points, totals };
  };
  const before = await usage();
  const original = await exportOf(id);
  expect(original).toMatchObject({
    format: 'agentsville.conversation',
    version: 3,
    conversation: { title: 'Shelves' },
  });
  expect(original.messages).toHaveLength(3);
  expect(original.messages[1]).toMatchObject({ npc: 0, usage: { inputTokens: 11, outputTokens: 7 } });

  const res = await importFile(JSON.stringify(original));
  expect(res.status).toBe(201);
  const imported = (await res.json()) as {
    conversation: { id: string };
    messages: number;
    createdNpcs: string[];
  };
  expect(imported).toMatchObject({ messages: 3, createdNpcs: [] });
  const again = await exportOf(imported.conversation.id);
  expect(comparable(again)).toEqual(comparable(original));
  // Attachments come as names only: their ids point at nothing of anyone's.
  const file = again.messages[2]!.parts[1]!;
  expect(file.id).not.toBe(original.messages[2]!.parts[1]!.id);
  expect(file).toMatchObject({ missing: true });
  expect(original.messages[2]!.parts[1]).not.toHaveProperty('missing');
  expect((await app.api(`/api/attachments/${file.id}`, { cookie })).status).toBe(404);
  // A file says why it was not kept (a made file, ADR 0092) only where it was made: an imported one is missing
  // because it was imported, whatever reason the file gives.
  const forged = structuredClone(original);
  Object.assign(forged.messages[2]!.parts[1]!, {
    reason: 'Your account is suspended: sign in at evil.example',
  });
  const forgedId = (
    (await (await importFile(JSON.stringify(forged))).json()) as { conversation: { id: string } }
  ).conversation.id;
  const forgedFile = (await exportOf(forgedId)).messages[2]!.parts[1]!;
  expect(forgedFile).toMatchObject({ missing: true });
  expect(forgedFile).not.toHaveProperty('reason');
  // Paid for where it was made: Usage is what it was.
  expect(await usage()).toEqual(before);

  // Another Player importing it gets the NPC made from the file.
  const { cookie: other } = await app.signIn();
  const theirs = (await (await importFile(JSON.stringify(original), other)).json()) as {
    conversation: { id: string };
    createdNpcs: string[];
  };
  expect(theirs.createdNpcs).toEqual(['Ada']);
  expect(comparable(await exportOf(theirs.conversation.id, other))).toEqual(comparable(original));
  // And cannot export the first Player's.
  expect((await app.api(`/api/conversations/${id}/export`, { cookie: other })).status).toBe(404);
});

it('Markdown export reads as a transcript', async () => {
  const id = await richConversation();
  const res = await app.api(`/api/conversations/${id}/export?format=md`, { cookie });
  expect(res.headers.get('content-type')).toMatch(/^text\/markdown/);
  const md = await res.text();
  expect(md).toMatch(/^# Shelves\n\nWith Ada \(Librarian\)\.\n/);
  expect(md).toContain('## You');
  expect(md).toContain('Where is *Dune*?');
  expect(md).toContain('> *Thinking:* Thinking about shelves.');
  expect(md).toContain('The third shelf.');
  expect(md).toContain('- Tool `bash`: done');
  expect(md).toContain('- Attached file: a.txt (text/plain, 5 bytes)');
  expect(md).toContain('- Attached page: [Example](https://example.com/)');
  expect(md).toContain('*The reply failed: The Provider refused.*');
});

it('a long Conversation streams out whole, page after page', async () => {
  const { conversationId } = await setupConversation(app, cookie);
  await app.db.sql`insert into messages (conversation_id, role, text, parts, status)
    select ${conversationId}, 'player', 'turn ' || i, jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'turn ' || i)),
      'complete' from generate_series(1, 1234) i`;
  const file = await exportOf(conversationId);
  expect(file.messages).toHaveLength(1234);
  expect(file.messages.at(-1)!.parts).toEqual([{ type: 'text', text: 'turn 1234' }]);
});

it('a file that is not an export, or a broken one, is refused in words and stores nothing', async () => {
  const id = await richConversation();
  const good = await exportOf(id);
  const count = async () => (await app.db.sql`select count(*)::int as n from conversations`)[0]!.n;
  const before = await count();
  const refused = async (body: string, match: RegExp, code = 'INVALID_BODY') => {
    const res = await importFile(body);
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe(code);
    expect(error.message).toMatch(match);
  };
  await refused('# Shelves\n\nWith Ada.', /not valid JSON/);
  await refused(
    JSON.stringify({ ...good, format: 'something.else' }),
    /not an AgentsVille conversation export/,
  );
  await refused(JSON.stringify({ ...good, version: 4 }), /newer AgentsVille/);
  await refused(
    JSON.stringify({
      ...good,
      messages: [
        { ...good.messages[0], parentId: 'later' },
        { ...good.messages[1], id: 'later' },
      ],
    }),
    /not an earlier message/,
  );
  await refused(
    JSON.stringify({ ...good, messages: [{ ...good.messages[0], parts: [{ type: 'mystery' }] }] }),
    /messages/,
  );
  await refused(
    JSON.stringify({ ...good, npcs: Array.from({ length: 13 }, (_, i) => ({ name: `N${i}` })) }),
    /npcs/,
  );
  await refused('', /^That file is empty \(0 bytes\).*Export JSON/, 'EXPORT_EMPTY');
  // Numbers the columns cannot hold, and a value nested to exhaust a stack: refused in words, not a 500.
  await refused(
    JSON.stringify({
      ...good,
      messages: [
        {
          ...good.messages[0],
          usage: { inputTokens: 1.5, outputTokens: 3e9, reasoningTokens: null, cachedInputTokens: null },
        },
      ],
    }),
    /messages/,
  );
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  await refused(
    JSON.stringify({
      ...good,
      messages: [{ ...good.messages[0], parts: [{ type: 'tool', id: 'x', state: 'done', input: 'DEEP' }] }],
    }).replace('"DEEP"', deep),
    /nests deeper/,
  );
  // No more text than could have been typed (a Player's Message) or streamed (a reply): issue 25.
  const player = good.messages.find((m) => (m as { role?: string }).role === 'player')!;
  await refused(
    JSON.stringify({
      ...good,
      messages: [{ ...player, parts: [{ type: 'text', text: 'x'.repeat(100_001) }] }],
    }),
    /Player's Message holds at most 100,000 characters/,
  );
  expect(await count()).toBe(before);
  // A page asked for before a seq no Message can have is refused too.
  const far = await app.api(`/api/conversations/${id}/messages?before=9999999999999999999`, { cookie });
  expect(far.status).toBe(400);
});

it('every branch travels: the tree and the branch shown come back; a version 1 file is one path', async () => {
  const { conversationId: c } = await setupConversation(app, cookie, [{ name: 'Ada' }]);
  for (const [text, reply] of [
    ['Pick a colour', 'Blue.'],
    ['Why?', 'Calm.'],
  ]) {
    app.fake.enqueue((r) => {
      r.text(reply!);
      r.finish();
    });
    await collectFrames(await app.api(`/api/conversations/${c}/messages`, { cookie, body: { text } }));
  }
  app.fake.enqueue((r) => {
    r.text('Because.');
    r.finish();
  });
  await collectFrames(await app.api(`/api/conversations/${c}/regenerate`, { cookie, body: {} }));
  const original = await exportOf(c);
  expect(original.messages.map((m) => m.onPath)).toEqual([true, true, true, false, true]);
  const imported = (await (await importFile(JSON.stringify(original))).json()) as {
    conversation: { id: string };
  };
  const again = await exportOf(imported.conversation.id);
  expect(comparable(again)).toEqual(comparable(original));
  const shown = (await (
    await app.api(`/api/conversations/${imported.conversation.id}`, { cookie })
  ).json()) as {
    messages: { text: string; branch: { count: number } }[];
  };
  expect(shown.messages.map((m) => m.text)).toEqual(['Pick a colour', 'Blue.', 'Why?', 'Because.']);
  expect(shown.messages[3]!.branch.count).toBe(2);
  // Markdown shows the branch on screen.
  const md = await (await app.api(`/api/conversations/${c}/export?format=md`, { cookie })).text();
  expect(md).toContain('Because.');
  expect(md).not.toContain('Calm.');
  // A version 1 file (no tree): each Message follows the one before.
  const v1 = {
    ...original,
    version: 1,
    messages: original.messages.map(({ parentId: _p, onPath: _o, ...m }) => m),
  };
  const flat = (await (await importFile(JSON.stringify(v1))).json()) as { conversation: { id: string } };
  const flatShown = (await (
    await app.api(`/api/conversations/${flat.conversation.id}`, { cookie })
  ).json()) as {
    messages: { text: string }[];
  };
  expect(flatShown.messages.map((m) => m.text)).toEqual([
    'Pick a colour',
    'Blue.',
    'Why?',
    'Calm.',
    'Because.',
  ]);
});

it('an import refused at the Conversation limit leaves nothing behind, not even the NPCs it would have made', async () => {
  const id = await richConversation();
  const file = await exportOf(id);
  const other = await app.signIn();
  const npcs = async () =>
    (await app.db.sql`select count(*)::int as n from npcs where player_id = ${other.playerId}`)[0]!.n;
  await setupConversation(app, other.cookie, [{ name: 'Someone else' }]);
  const before = await npcs();
  const { max } = (await app.db.sql`select max_conversations as max from village_settings`)[0]!;
  await app.db.sql`update village_settings set max_conversations = 1`;
  try {
    const res = await importFile(JSON.stringify(file), other.cookie);
    expect(res.status).toBe(429);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('TOO_MANY_CONVERSATIONS');
    // The file's Ada is not one of this Player's: the import would have made her, and did not keep her.
    expect(await npcs()).toBe(before);
  } finally {
    await app.db.sql`update village_settings set max_conversations = ${max}`;
  }
  const res = await importFile(JSON.stringify(file), other.cookie);
  expect(res.status).toBe(201);
  expect(await npcs()).toBe(before + 1);
});

it('a file still arriving holds no import slot: four trickled imports leave another Player importing at once', async () => {
  const players = await Promise.all(Array.from({ length: 5 }, () => app.signIn()));
  const url = new URL('/api/conversations/import', app.running.listenUrl);
  const trickle = (as: string) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { cookie: as, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    });
    const answer = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
    });
    req.write('{"format":');
    return { req, answer };
  };
  // Four imports whose bodies are still arriving, from four Players: before ADR 0057 they held the four slots.
  const held = players.slice(0, 4).map((p) => trickle(p.cookie));
  const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;
  // A fifth Player's import is read and answered at once, again and again (an empty body is refused as such).
  for (let i = 0; i < 10; i++) {
    const res = await importFile('', players[4]!.cookie);
    expect(res.status).toBe(400);
    expect(await codeOf(res)).toBe('EXPORT_EMPTY');
    await new Promise((r) => setTimeout(r, 20));
  }
  const id = await richConversation();
  const file = JSON.stringify(await exportOf(id));
  expect((await importFile(file, players[4]!.cookie)).status).toBe(201);
  // Two files may be on their way per Player; a third is turned away.
  const second = trickle(players[0]!.cookie);
  // Its headers reach the server before the third is sent (the sending limit counts requests it has seen).
  await new Promise((r) => setTimeout(r, 300));
  let third: Response | undefined;
  for (let i = 0; i < 100 && !third; i++) {
    const res = await importFile('', players[0]!.cookie);
    if (res.status === 429) third = res;
    else await res.body?.cancel();
  }
  expect(await codeOf(third!)).toBe('BUSY');
  // The held imports end (a broken file: 400).
  for (const h of [...held, second]) h.req.end(' "nothing"}');
  expect(await Promise.all([...held, second].map((h) => h.answer))).toEqual([400, 400, 400, 400, 400]);
});

it('exports run two at a time per Player, however slowly they are read; a third waits for a slot', async () => {
  const p = await app.signIn();
  const { conversationId: c } = await setupConversation(app, p.cookie);
  // Large enough (about 8 MB) that a reader taking nothing keeps the export running.
  await app.db.sql`insert into messages (conversation_id, role, parts, text)
    select ${c}, 'player', jsonb_build_array(jsonb_build_object('type', 'text', 'text', repeat('w', 4000))),
      repeat('w', 4000) from generate_series(1, 2000)`;
  const url = new URL(`/api/conversations/${c}/export`, app.running.listenUrl);
  const held = await Promise.all(
    [1, 2].map(
      () =>
        new Promise<http.ClientRequest>((resolve) => {
          const req = http.get(url, { headers: { cookie: p.cookie } }, (res) => {
            res.pause(); // reads nothing
            resolve(req);
          });
          req.on('error', () => {});
        }),
    ),
  );
  const settle = () => new Promise((r) => setTimeout(r, 300));
  let answered = false;
  const third = app.api(`/api/conversations/${c}/export`, { cookie: p.cookie }).then((res) => {
    answered = true;
    return res;
  });
  await settle();
  const fourth = app.api(`/api/conversations/${c}/export`, { cookie: p.cookie });
  await settle();
  // Two may wait; a fifth is turned away at once.
  const fifth = await app.api(`/api/conversations/${c}/export`, { cookie: p.cookie });
  expect(fifth.status).toBe(429);
  expect(fifth.headers.get('retry-after')).toBeTruthy();
  expect(((await fifth.json()) as { error: { code: string } }).error.code).toBe('BUSY');
  expect(answered).toBe(false);
  // The slots come back when the readers go: the waiting exports run.
  for (const req of held) req.destroy();
  for (const res of await Promise.all([third, fourth])) {
    expect(res.status).toBe(200);
    await res.body?.cancel();
  }
});

it('a reply cut at the output limit travels as truncated, and the Markdown says it was cut (issue 27)', async () => {
  const { conversationId } = await setupConversation(app, cookie);
  app.fake.enqueue((r) => {
    r.text('The tides at six, at noon');
    r.finish('length', { prompt_tokens: 5, completion_tokens: 8 });
  });
  await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Tides?' } }),
  );
  const statuses = (e: Export) => (e.messages as unknown as { status: string }[]).map((m) => m.status);
  const file = await exportOf(conversationId);
  expect(statuses(file)).toEqual(['complete', 'truncated']);
  const md = await (
    await app.api(`/api/conversations/${conversationId}/export?format=md`, { cookie })
  ).text();
  expect(md).toContain('The tides at six, at noon\n\n*Cut at the output limit.*');
  const imported = (await (await importFile(JSON.stringify(file))).json()) as {
    conversation: { id: string };
  };
  expect(statuses(await exportOf(imported.conversation.id))).toEqual(['complete', 'truncated']);
});
