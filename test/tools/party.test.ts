import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

const handOver =
  (npc: string, message: string, say = '') =>
  (r: Reply) => {
    if (say) r.text(say);
    r.toolCallStart(0, `call_${npc}`, 'message_npc', JSON.stringify({ npc, message }));
    r.finish('tool_calls');
  };
const reply = (text: string) => (r: Reply) => {
  r.text(text);
  r.finish();
};
const trio = [
  { name: 'Ada', jobTitle: 'Librarian', description: 'Keeps the maps. Very old.' },
  { name: 'Bo', jobTitle: 'Smith', description: 'Makes tools.' },
  { name: 'Cy', jobTitle: 'Cartographer', description: 'Draws maps.' },
];
const streamed = () => app.fake.requests.filter((r) => r.body.stream);

describe('a Party', () => {
  it('hands over twice in one stream: each NPC answers with its own start frame and context', async () => {
    const { conversationId } = await setupConversation(app, cookie, trio);
    app.fake.enqueue(
      handOver('Bo', 'Can you forge a compass?', 'Let me ask Bo. '),
      handOver('Cy', 'Which way is north on the old map?'),
      reply('North is up, as always.'),
    );
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: 'Ada, help me find north' },
      }),
    );
    const starts = frames.filter((f): f is Extract<Frame, { type: 'start' }> => f.type === 'start');
    expect(starts.map((s) => s.npc.name)).toEqual(['Ada', 'Bo', 'Cy']);
    expect(frames.filter((f) => f.type === 'finish').map((f) => (f as { status: string }).status)).toEqual([
      'complete',
      'complete',
      'complete',
    ]);
    // Bo's context was assembled from scratch: Ada's reply attributed, the hand-over last, Bo's own identity.
    const bo = streamed().at(-2)!.body;
    expect(bo.messages[0]?.content).toMatch(/^# Who you are\nYou are Bo, Smith\./);
    expect(bo.messages.at(-2)).toEqual({ role: 'assistant', content: '[Ada]: Let me ask Bo. ' });
    expect(bo.messages.at(-1)).toEqual({ role: 'user', content: '[Ada, to you]: Can you forge a compass?' });
    expect(bo.messages[0]?.content).toContain(
      '# Others in this conversation\n- Ada (Librarian): Keeps the maps.\n- Cy',
    );
    expect((bo.tools ?? []).map((t) => t.function.name)).toEqual(['message_npc']);
    const stored = await messages(app, cookie, conversationId);
    expect(stored.map((m) => m.npcName ?? 'Player')).toEqual(['Player', 'Ada', 'Bo', 'Cy']);
    expect(stored.at(-1)?.text).toBe('North is up, as always.');
  });

  it('reaching the hop limit ends with an error frame that says so', async () => {
    const { conversationId } = await setupConversation(app, cookie, trio);
    await app.db.sql`update village_settings set hop_limit = 1`;
    try {
      app.fake.enqueue(handOver('Bo', 'Your turn'), handOver('Cy', 'And yours'));
      const frames = await collectFrames(
        await app.api(`/api/conversations/${conversationId}/messages`, {
          cookie,
          body: { text: '@Ada start' },
        }),
      );
      expect(frames.filter((f) => f.type === 'start').length).toBe(2);
      const last = frames.at(-1)!;
      expect(last).toMatchObject({ type: 'error', code: 'HOP_LIMIT' });
      expect((last as { message: string }).message).toMatch(/hop limit/);
    } finally {
      await app.db.sql`update village_settings set hop_limit = 6`;
    }
  });

  it('a hand-over to no such NPC does not end the reply: the Model reads why and answers itself', async () => {
    const { conversationId } = await setupConversation(app, cookie, trio);
    app.fake.enqueue(handOver('Zed', 'hi'), reply('Zed is not here; I will answer myself.'));
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: '@Ada ask Zed' },
      }),
    );
    expect(frames.filter((f) => f.type === 'start').length).toBe(1);
    expect(frames.filter((f) => f.type === 'error')).toEqual([]);
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
    // The second step carried the failed call's reason to the Model.
    const second = streamed().at(-1)!.body;
    expect(JSON.stringify(second.messages.at(-1))).toMatch(
      /no NPC named .{1,6}Zed.{1,6} here\. You can hand over to: Bo, Cy/,
    );
    const stored = await messages(app, cookie, conversationId);
    expect(stored.at(-1)).toMatchObject({ npcName: 'Ada', status: 'complete' });
    expect(stored.at(-1)?.text).toBe('Zed is not here; I will answer myself.');
  });

  it('a reply that used all its steps on tools ends failed, with an error frame that says so', async () => {
    const { conversationId } = await setupConversation(app, cookie, trio);
    const before = streamed().length;
    // Each step's call has its own id, as Providers give them.
    app.fake.enqueue(
      ...Array.from({ length: 8 }, (_, i) => (r: Reply) => {
        r.toolCallStart(0, `call_${i}`, 'message_npc', JSON.stringify({ npc: 'Zed', message: 'hi' }));
        r.finish('tool_calls');
      }),
    );
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: '@Ada ask Zed' },
      }),
    );
    expect(streamed().length - before).toBe(8);
    expect(frames.filter((f) => f.type === 'start').length).toBe(1);
    const error = frames.find((f) => f.type === 'error') as { code: string; message: string };
    expect(error).toMatchObject({ code: 'STEP_LIMIT' });
    expect(error.message).toMatch(/all 8 of its steps/);
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'failed' });
    // What it did is kept: eight failed calls, in order.
    const stored = await messages(app, cookie, conversationId);
    const parts = stored.at(-1)!.parts as { type: string; state?: string }[];
    expect(parts.filter((p) => p.type === 'tool').map((p) => p.state)).toEqual(Array(8).fill('failed'));
    expect(stored.at(-1)).toMatchObject({ status: 'failed' });
  });

  it('the Player addresses an NPC by @name; a solo Conversation has no message_npc', async () => {
    const { conversationId } = await setupConversation(app, cookie, trio);
    app.fake.enqueue(reply('Cy here.'));
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: 'So, @Cy, what now?' },
      }),
    );
    expect(frames[0]).toMatchObject({ type: 'start', npc: { name: 'Cy' } });
    const solo = await setupConversation(app, cookie);
    await collectFrames(
      await app.api(`/api/conversations/${solo.conversationId}/messages`, { cookie, body: { text: 'hi' } }),
    );
    expect(streamed().at(-1)!.body.tools).toBeUndefined();
  });
});

describe('the system prompt', () => {
  it('has every slot in the seed order when all are present', async () => {
    const { conversationId, npcIds } = await setupConversation(app, cookie, [
      { ...trio[0], prompt: 'PLAYER PROMPT: be kind.' },
      trio[1]!,
    ]);
    const skill = (await (
      await app.api('/api/skills', {
        cookie,
        body: { name: 'mapping', description: 'SKILL INDEX entry', instructions: 'x' },
      })
    ).json()) as { skill: { id: string } };
    const dead = (await (
      await app.api('/api/mcp-servers', { cookie, body: { name: 'Offline', url: 'http://127.0.0.1:9/mcp' } })
    ).json()) as {
      server: { id: string };
    };
    await app.api(`/api/npcs/${npcIds[0]}/grants`, {
      method: 'PUT',
      cookie,
      body: {
        grants: [
          { kind: 'memory' },
          { kind: 'skill', skillId: skill.skill.id },
          { kind: 'mcp', mcpServerId: dead.server.id },
        ],
      },
    });
    await app.api('/api/memories', { cookie, body: { text: 'RECALLED: the compass points north.' } });
    await app.db
      .sql`update conversations set summary = 'ROLLING SUMMARY of earlier talk' where id = ${conversationId}`;
    await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie,
        body: { text: 'Ada, where does the compass point?' },
      }),
    );
    const prompt = streamed().at(-1)!.body.messages[0]!.content as string;
    const order = [
      '# Who you are',
      'PLAYER PROMPT',
      'SKILL INDEX',
      'Offline',
      'RECALLED',
      '# Others in this conversation',
      'ROLLING SUMMARY',
    ].map((needle) => prompt.indexOf(needle));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });
});
