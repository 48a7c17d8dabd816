import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { startMcpServer } from '../support/mcpServer.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, sendAndStop, settled, setupConversation } from '../support/turns.ts';

let app: TestApp;
let cookie: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
beforeAll(async () => {
  app = await startTestApp({}, { TOOL_TIMEOUT_MS: '3000', TOOL_MAX_OUTPUT_BYTES: '4096' });
  ({ cookie } = await app.signIn());
  mcp = await startMcpServer();
});
afterAll(async () => {
  await mcp?.close();
  await app?.close();
});

const say = async (conversationId: string, text: string, npcId?: string) =>
  collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text, ...(npcId ? { npcId } : {}) },
    }),
  );
const grant = (npcId: string, grants: unknown[]) =>
  app.api(`/api/npcs/${npcId}/grants`, { method: 'PUT', cookie, body: { grants } });
/** The model calls one tool, then (next step) says `after`. */
const callThen = (name: string, args: unknown, after = 'Done.') => [
  (r: Reply) => {
    r.toolCallStart(0, `call_${name}`, name, JSON.stringify(args));
    r.finish('tool_calls');
  },
  (r: Reply) => {
    r.text(after);
    r.finish();
  },
];
const toolNames = (i = -1) =>
  (app.fake.requests.filter((r) => r.body.stream).at(i)?.body.tools ?? []).map((t) => t.function.name).sort();
const system = (i = -1) =>
  app.fake.requests.filter((r) => r.body.stream).at(i)?.body.messages[0]?.content as string;
const toolPart = async (conversationId: string) =>
  (await messages(app, cookie, conversationId))
    .at(-1)!
    .parts.find((p) => (p as { type: string }).type === 'tool') as {
    name: string;
    state: string;
    output?: unknown;
    error?: string;
  };

describe('grants', () => {
  it('a Tool nobody granted is absent from what the Provider receives', async () => {
    const { conversationId, npcIds } = await setupConversation(app, cookie);
    await say(conversationId, 'hello');
    expect(toolNames()).toEqual([]);
    expect((await grant(npcIds[0]!, [{ kind: 'memory' }, { kind: 'sandbox' }])).status).toBe(200);
    await say(conversationId, 'again');
    expect(toolNames()).toEqual(['bash', 'readFile', 'remember', 'share_file', 'writeFile']);
  });

  it("refuses to grant another Player's Skill", async () => {
    const other = await app.signIn();
    const skill = (await (
      await app.api('/api/skills', {
        cookie: other.cookie,
        body: { name: 'theirs', description: 'd', instructions: 'i' },
      })
    ).json()) as { skill: { id: string } };
    const { npcIds } = await setupConversation(app, cookie);
    const res = await grant(npcIds[0]!, [{ kind: 'skill', skillId: skill.skill.id }]);
    expect(res.status).toBe(400);
  });

  it('grants are saved with the NPC in one transaction: at creation, on edit, or not at all', async () => {
    const grantsOf = async (id: string) =>
      (
        (await (await app.api(`/api/npcs/${id}/grants`, { cookie })).json()) as { grants: { kind: string }[] }
      ).grants
        .map((g) => g.kind)
        .sort();
    const made = await app.api('/api/npcs', { cookie, body: { name: 'Gran', grants: [{ kind: 'memory' }] } });
    expect(made.status).toBe(201);
    const { npc } = (await made.json()) as { npc: { id: string } };
    expect(await grantsOf(npc.id)).toEqual(['memory']);

    // A PATCH without `grants` leaves them; with them, replaces them together with the fields.
    await app.api(`/api/npcs/${npc.id}`, { method: 'PATCH', cookie, body: { jobTitle: 'Baker' } });
    expect(await grantsOf(npc.id)).toEqual(['memory']);
    const edited = await app.api(`/api/npcs/${npc.id}`, {
      method: 'PATCH',
      cookie,
      body: { name: 'Granny', grants: [{ kind: 'sandbox' }] },
    });
    expect(edited.status).toBe(200);
    expect(await grantsOf(npc.id)).toEqual(['sandbox']);

    // A refused grant refuses the whole save: no NPC made, no field changed.
    const before = ((await (await app.api('/api/npcs', { cookie })).json()) as { npcs: unknown[] }).npcs
      .length;
    const foreign = { kind: 'mcp', mcpServerId: crypto.randomUUID() };
    const refused = await app.api('/api/npcs', { cookie, body: { name: 'Nope', grants: [foreign] } });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('UNKNOWN_GRANT');
    expect(((await (await app.api('/api/npcs', { cookie })).json()) as { npcs: unknown[] }).npcs.length).toBe(
      before,
    );
    const patch = await app.api(`/api/npcs/${npc.id}`, {
      method: 'PATCH',
      cookie,
      body: { name: 'Changed', grants: [{ kind: 'memory' }, foreign] },
    });
    expect(patch.status).toBe(400);
    const after = (await (await app.api(`/api/npcs/${npc.id}`, { cookie })).json()) as {
      npc: { name: string };
    };
    expect(after.npc.name).toBe('Granny');
    expect(await grantsOf(npc.id)).toEqual(['sandbox']);
  });
});

describe('Memory', () => {
  it('remember writes the Player’s Memory; the next turn recalls what is relevant to the question', async () => {
    const { conversationId, npcIds } = await setupConversation(app, cookie);
    await grant(npcIds[0]!, [{ kind: 'memory' }]);
    await app.api('/api/memories', {
      cookie,
      body: { text: 'The Player prefers green tea in the morning.' },
    });
    app.fake.enqueue(
      ...callThen('remember', { text: 'The Player’s cat is called Miso.' }, 'I will remember that.'),
    );
    await say(conversationId, 'My cat is called Miso, please remember.');
    expect((await toolPart(conversationId)).state).toBe('done');
    const list = (await (await app.api('/api/memories', { cookie })).json()) as {
      memories: { text: string }[];
    };
    expect(list.memories.map((m) => m.text)).toContain('The Player’s cat is called Miso.');
    await say(conversationId, 'What is my cat called?');
    const prompt = system();
    expect(prompt).toContain('# What you remember\n- The Player’s cat is called Miso.');
    expect(prompt).not.toContain('green tea');
  });
});

describe('Skills', () => {
  it('the prompt carries only the index; load_skill returns the instructions on demand', async () => {
    const created = (await (
      await app.api('/api/skills', {
        cookie,
        body: {
          name: 'haiku',
          description: 'Write replies as haiku.',
          instructions: 'Three lines: 5, 7 and 5 syllables.',
        },
      })
    ).json()) as { skill: { id: string } };
    const { conversationId, npcIds } = await setupConversation(app, cookie);
    await grant(npcIds[0]!, [{ kind: 'skill', skillId: created.skill.id }]);
    app.fake.enqueue(...callThen('load_skill', { name: 'haiku' }));
    await say(conversationId, 'A poem please');
    expect(system(-2)).toContain('- haiku: Write replies as haiku.');
    expect(system(-2)).not.toContain('5, 7 and 5');
    expect((await toolPart(conversationId)).output).toEqual({
      name: 'haiku',
      instructions: 'Three lines: 5, 7 and 5 syllables.',
    });
  });
});

describe('the Sandbox', () => {
  it('keeps files for the Conversation across turns, and every escape fails safely', async () => {
    const { conversationId, npcIds } = await setupConversation(app, cookie);
    await grant(npcIds[0]!, [{ kind: 'sandbox' }]);
    const run = async (command: string) => {
      app.fake.enqueue(...callThen('bash', { command }));
      await say(conversationId, `run ${command}`);
      return toolPart(conversationId);
    };
    const first = await run('echo kept > notes.txt');
    expect(first.state, JSON.stringify(first)).toBe('done');
    expect((await run('cat notes.txt')).output).toMatchObject({ stdout: 'kept\n', exitCode: 0 });
    expect((await run('cat /etc/passwd')).output).toMatchObject({ exitCode: 1 });
    expect((await run('cat ../../../../../etc/hostname')).output).toMatchObject({ exitCode: 1 });
    // A server that is really listening: the sandbox must not reach it (no network), not merely fail to.
    let connections = 0;
    const listener = http.createServer((_req, res) => res.end('reached'));
    listener.on('connection', () => {
      connections++;
    });
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
    const port = (listener.address() as AddressInfo).port;
    try {
      for (const command of [`curl http://127.0.0.1:${port}/`, `wget -O- http://127.0.0.1:${port}/`]) {
        const out = (await run(command)).output as { stdout: string; exitCode: number };
        expect(out.exitCode).not.toBe(0);
        expect(out.stdout).not.toContain('reached');
      }
      expect(connections).toBe(0);
    } finally {
      await new Promise<void>((r) => listener.close(() => r()));
    }
    const bomb = await run(':(){ :|:& };:');
    expect((bomb.output as { exitCode: number }).exitCode).not.toBe(0);
    const huge = await run('seq 1 200000');
    expect(Buffer.byteLength(JSON.stringify(huge.output ?? huge.error))).toBeLessThanOrEqual(4096 + 200);
  });
});

describe('MCP Servers', () => {
  it('their tools are granted per NPC, called over real MCP; failures and slow calls fail clearly; an unreachable one is named', async () => {
    const server = (await (
      await app.api('/api/mcp-servers', {
        cookie,
        body: { name: 'Calc', url: mcp.url, headers: { Authorization: 'Bearer s3cret' } },
      })
    ).json()) as { server: { id: string } };
    const dead = (await (
      await app.api('/api/mcp-servers', { cookie, body: { name: 'Gone', url: 'http://127.0.0.1:9/mcp' } })
    ).json()) as {
      server: { id: string };
    };
    const listed = (await (await app.api('/api/mcp-servers', { cookie })).json()) as {
      servers: { headerNames: string[] }[];
    };
    expect(JSON.stringify(listed)).not.toContain('s3cret');
    const { conversationId, npcIds } = await setupConversation(app, cookie);
    await grant(npcIds[0]!, [
      { kind: 'mcp', mcpServerId: server.server.id },
      { kind: 'mcp', mcpServerId: dead.server.id },
    ]);
    app.fake.enqueue(...callThen('calc__add', { a: 2, b: 3 }, 'It is 5.'));
    await say(conversationId, 'What is 2 + 3?');
    expect(toolNames(-2)).toEqual(['calc__add', 'calc__boom', 'calc__slow']);
    expect(system(-2)).toMatch(/# Tools unavailable this turn\n.*Gone/);
    expect(JSON.stringify((await toolPart(conversationId)).output)).toContain('"5"');
    expect(mcp.headers.some((h) => h.authorization === 'Bearer s3cret')).toBe(true);

    app.fake.enqueue(...callThen('calc__boom', {}));
    await say(conversationId, 'Explode');
    const boom = await toolPart(conversationId);
    expect(boom.state === 'failed' || JSON.stringify(boom.output).includes('exploded')).toBe(true);

    app.fake.enqueue(...callThen('calc__slow', {}));
    await say(conversationId, 'Take your time');
    const slow = await toolPart(conversationId);
    expect(slow).toMatchObject({ state: 'failed' });
    expect(slow.error).toMatch(/took longer than 3 s/);
  });

  it('two MCP Servers whose names read alike both keep their tools: the later one is told apart', async () => {
    const add = async (name: string) =>
      (
        (await (await app.api('/api/mcp-servers', { cookie, body: { name, url: mcp.url } })).json()) as {
          server: { id: string };
        }
      ).server.id;
    const ids = [await add('Numbers'), await add('NUMBERS'), await add('Numbers 2'), await add('numbers!')];
    const { conversationId, npcIds } = await setupConversation(app, cookie);
    await grant(
      npcIds[0]!,
      ids.map((mcpServerId) => ({ kind: 'mcp', mcpServerId })),
    );
    app.fake.enqueue(...callThen('numbers_3__add', { a: 4, b: 5 }, 'Nine.'));
    await say(conversationId, 'What is 4 + 5?');
    const names = toolNames(-2);
    expect(names.filter((n) => n.endsWith('__add'))).toEqual(
      ['numbers_2__add', 'numbers_3__add', 'numbers__add', 'numbers_4__add'].sort(),
    );
    expect(JSON.stringify((await toolPart(conversationId)).output)).toContain('"9"');
  });

  it('Stop aborts a running tool: the call is kept as failed, the reply as stopped', async () => {
    const server = (await (
      await app.api('/api/mcp-servers', { cookie, body: { name: 'Calc', url: mcp.url } })
    ).json()) as {
      server: { id: string };
    };
    const { conversationId, npcIds } = await setupConversation(app, cookie);
    await grant(npcIds[0]!, [{ kind: 'mcp', mcpServerId: server.server.id }]);
    app.fake.enqueue(...callThen('calc__slow', {}));
    await sendAndStop(app, cookie, conversationId, 'Go slow', (f) =>
      f.some((x) => x.type === 'part' && (x.part as { type: string; state?: string }).state === 'running'),
    );
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply?.status).toBe('stopped');
    expect(reply?.parts[0]).toMatchObject({ type: 'tool', name: 'calc__slow', state: 'failed' });
    // Ended by the Stop, not by the tool's own time limit.
    expect((reply!.parts[0] as { error?: string }).error).not.toMatch(/took longer/);
  });

  it('refuses a private address when the instance does not allow them (SSRF guard)', async () => {
    const strict = await startTestApp({ allowPrivateToolUrls: false });
    try {
      const c = await strict.signIn();
      const res = await strict.api('/api/mcp-servers', {
        cookie: c.cookie,
        body: { name: 'Local', url: 'http://127.0.0.1:8080/mcp' },
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('URL_NOT_ALLOWED');
    } finally {
      await strict.close();
    }
  });
});

describe('what one Player may keep is bounded', () => {
  const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

  it('MCP Servers: twenty-five added at once make exactly twenty', async () => {
    const p = await app.signIn();
    const answers = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        app.api('/api/mcp-servers', { cookie: p.cookie, body: { name: `S${i}`, url: mcp.url } }),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(20);
    for (const a of answers.filter((r) => r.status !== 201))
      expect(await codeOf(a)).toBe('TOO_MANY_MCP_SERVERS');
    const { n } = (
      await app.db.sql`select count(*)::int as n from mcp_servers where player_id = ${p.playerId}`
    )[0]!;
    expect(n).toBe(20);
  });

  it('Skills: two hundred, then a clear refusal', async () => {
    const p = await app.signIn();
    await app.db.sql`insert into skills (player_id, name, description, instructions)
      select ${p.playerId}, 'skill-' || i, '', 'x' from generate_series(1, 199) i`;
    const skill = (name: string) =>
      app.api('/api/skills', { cookie: p.cookie, body: { name, description: 'd', instructions: 'i' } });
    expect((await skill('last')).status).toBe(201);
    const over = await skill('one-too-many');
    expect(over.status).toBe(429);
    expect(await codeOf(over)).toBe('TOO_MANY_SKILLS');
  });

  it('Memory: ten thousand entries, by hand, by the remember tool and from a card, then refused in words', async () => {
    const p = await app.signIn();
    await app.db.sql`insert into memories (player_id, text)
      select ${p.playerId}, 'fact ' || i from generate_series(1, 9999) i`;
    const remember = (text: string) => app.api('/api/memories', { cookie: p.cookie, body: { text } });
    expect((await remember('the last one')).status).toBe(201);
    const over = await remember('one too many');
    expect(over.status).toBe(429);
    expect(await codeOf(over)).toBe('TOO_MANY_MEMORIES');
    // A card's lorebook is its NPC's, not the Player's Memory (issue 29): a full Memory does not stop an import.
    const card = {
      spec: 'chara_card_v2',
      spec_version: '2.0',
      data: {
        name: 'Lore',
        description: '',
        character_book: { entries: [{ keys: ['k'], content: 'lore' }] },
      },
    };
    const imported = await app.api('/api/npcs/import', { cookie: p.cookie, body: card });
    expect(imported.status).toBe(201);
    const kept = await app.db.sql`select count(*)::int as n from memories where player_id = ${p.playerId}`;
    expect(kept[0]!.n).toBe(10_000);
    // The NPC's remember tool fails as a tool, in words, and the reply goes on.
    const { conversationId, npcIds } = await setupConversation(app, p.cookie);
    await app.api(`/api/npcs/${npcIds[0]}/grants`, {
      method: 'PUT',
      cookie: p.cookie,
      body: { grants: [{ kind: 'memory' }] },
    });
    // (A reply stopped earlier in this file left its second script unread.)
    app.fake.clear();
    app.fake.enqueue(...callThen('remember', { text: 'no room' }, 'Noted.'));
    await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie: p.cookie,
        body: { text: 'Remember this' },
      }),
    );
    const reply = (await messages(app, p.cookie, conversationId)).at(-1)!;
    expect(reply.parts[0]).toMatchObject({ type: 'tool', name: 'remember', state: 'failed' });
    expect((reply.parts[0] as { error: string }).error).toMatch(/may hold 10,000/);
    const { n } = (
      await app.db.sql`select count(*)::int as n from memories where player_id = ${p.playerId}`
    )[0]!;
    expect(n).toBe(10_000);
  });
});
