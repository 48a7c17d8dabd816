import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

// Each Message must be taken: a refused one (a 409 while the last turn's claim was still held — the cause of
// this file's old flake, fixed by releasing the claim before the last frame) must fail here, not later as a
// missing summary.
const say = async (conversationId: string, text: string) => {
  const res = await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text } });
  expect(res.status, await res.clone().text()).toBe(200);
  const frames = await collectFrames(res);
  expect(frames.at(-1)?.type).toBe('finish');
  return frames;
};
const streamed = () => app.fake.requests.filter((r) => r.body.stream);
const summaries = () => app.fake.requests.filter((r) => !r.body.stream);
const promptOf = (r: { body: { messages: { role: string; content: unknown }[] } }) =>
  r.body.messages.find((m) => m.role === 'system')?.content as string;
const filler = (marker: string) => `${marker} ${'lorem ipsum '.repeat(75)}`; // about 900 characters

describe('windowing and the rolling summary', () => {
  it('sends only the tail within budget and folds what falls off into the summary first, incrementally', async () => {
    const { conversationId } = await setupConversation(app, cookie, [
      { name: 'Ada', jobTitle: 'Librarian', description: 'Keeps the stacks.', prompt: 'Speak briefly.' },
    ]);
    await app.db.sql`update village_settings set history_budget = 1000`; // 4,000 characters
    try {
      const before = summaries().length;
      for (let i = 1; i <= 2; i++) {
        app.fake.enqueue(textScript(filler(`R${i}`)));
        await say(conversationId, filler(`P${i}`));
      }
      // Five turns of ~900 characters exceed the 4,000-character budget: the third Player turn folds the
      // oldest turns into the summary until the window is at three quarters of it (P1 and R1 go).
      expect(summaries().length).toBe(before);
      app.fake.enqueue(textScript(filler('R3')));
      app.fake.summaryText = 'SUMMARY-ONE';
      await say(conversationId, filler('P3'));
      const firstSummary = summaries().at(-1)!;
      const firstSummaryPrompt = JSON.stringify(firstSummary.body.messages);
      expect(firstSummaryPrompt).toContain('(none yet)');
      expect(firstSummaryPrompt).toContain('P1 ');
      expect(firstSummaryPrompt).toContain('R1 ');
      expect(firstSummaryPrompt).not.toContain('P2 ');

      const third = streamed().at(-1)!;
      const sent = third.body.messages.filter((m) => m.role !== 'system').map((m) => String(m.content));
      expect(sent.join('').length).toBeLessThanOrEqual(3000);
      expect(sent.at(-1)).toContain('P3 ');
      expect(sent.some((s) => s.includes('P1 ') || s.includes('R1 '))).toBe(false);
      expect(promptOf(third).endsWith('# Earlier in this conversation\nSUMMARY-ONE')).toBe(true);

      app.fake.enqueue(textScript(filler('R4')));
      app.fake.summaryText = 'SUMMARY-TWO';
      await say(conversationId, filler('P4'));
      const second = JSON.stringify(summaries().at(-1)!.body.messages);
      // Incremental: the summary so far plus only the newly dropped turns.
      expect(second).toContain('SUMMARY-ONE');
      expect(second).toContain('P2 ');
      expect(second).toContain('R2 ');
      expect(second).not.toContain('P1 ');
      expect(second).not.toContain('R1 ');
      expect(promptOf(streamed().at(-1)!)).toContain('SUMMARY-TWO');

      // The fold left room: a short turn next fits the budget, and makes no summary call at all.
      const folds = summaries().length;
      app.fake.enqueue(textScript('R5'));
      await say(conversationId, 'P5 short');
      expect(summaries().length).toBe(folds);
      expect(promptOf(streamed().at(-1)!)).toContain('SUMMARY-TWO');

      // Nothing was deleted.
      const all = await messages(app, cookie, conversationId);
      expect(all.map((m) => m.text.slice(0, 2))).toEqual([
        'P1',
        'R1',
        'P2',
        'R2',
        'P3',
        'R3',
        'P4',
        'R4',
        'P5',
        'R5',
      ]);
    } finally {
      await app.db.sql`update village_settings set history_budget = 60000`;
    }
  });

  it('a long backlog is folded four calls a turn at most, each call charged to the Player and kept at once', async () => {
    const p = await app.signIn();
    const { conversationId } = await setupConversation(app, p.cookie);
    // An imported-like backlog: forty turns of ~900 characters, never summarised.
    await app.db.sql`insert into messages (conversation_id, role, npc_name, parts, text)
      select ${conversationId}, case when i % 2 = 1 then 'player' else 'npc' end,
        case when i % 2 = 1 then null else 'Ada' end,
        jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'B' || i || ' ' || repeat('lorem ipsum ', 75))),
        'B' || i || ' ' || repeat('lorem ipsum ', 75)
      from generate_series(1, 40) i`;
    await app.db.sql`update village_settings set history_budget = 1000`;
    const spent = async () =>
      (
        await app.db
          .sql`select coalesce(sum(tokens), 0)::int as n from daily_spend where player_id = ${p.playerId}`
      )[0]!.n as number;
    const through = async () =>
      Number(
        (await app.db.sql`select summary_through from conversations where id = ${conversationId}`)[0]!
          .summary_through,
      );
    try {
      const before = { calls: summaries().length, spent: await spent() };
      const turn = async () => {
        const res = await app.api(`/api/conversations/${conversationId}/messages`, {
          cookie: p.cookie,
          body: { text: 'Go on' },
        });
        expect(res.status).toBe(200);
        await collectFrames(res);
      };
      await turn();
      const calls = summaries().length - before.calls;
      expect(calls).toBe(4);
      // Each summary call is charged (the fake reports 10 + 2 tokens), besides the reply's own usage.
      const [reply] = await app.db.sql`select input_tokens + output_tokens as n from messages
        where conversation_id = ${conversationId} and role = 'npc' order by seq desc limit 1`;
      expect((await spent()) - before.spent).toBe(calls * 12 + Number(reply!.n));
      // The summary went as far as the four calls covered; the next turn goes on from there.
      const first = await through();
      expect(first).toBeGreaterThan(0);
      await turn();
      expect(await through()).toBeGreaterThan(first);
    } finally {
      await app.db.sql`update village_settings set history_budget = 60000`;
    }
  });

  it('keeps a final turn that alone exceeds the budget', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    await app.db.sql`update village_settings set history_budget = 1000`;
    try {
      const huge = `HUGE ${'z'.repeat(10_000)}`;
      await say(conversationId, huge);
      const last = streamed().at(-1)!;
      expect(last.body.messages.at(-1)).toEqual({ role: 'user', content: huge });
    } finally {
      await app.db.sql`update village_settings set history_budget = 60000`;
    }
  });
});

describe('what the Provider receives', () => {
  it('gets the identity first and the Player prompt after it', async () => {
    const { conversationId } = await setupConversation(app, cookie, [
      { name: 'Quill', jobTitle: 'Scribe', description: 'Writes things down.', prompt: 'Always rhyme.' },
    ]);
    await say(conversationId, 'Hello');
    expect(promptOf(streamed().at(-1)!)).toBe(
      '# Who you are\nYou are Quill, Scribe.\nWrites things down.\n\nAlways rhyme.',
    );
  });

  it('in a Party: replies attributed by name, and the others in the roster', async () => {
    const { conversationId, npcIds } = await setupConversation(app, cookie, [
      { name: 'Ada', jobTitle: 'Librarian', description: 'Keeps the stacks. Knows every book.' },
      { name: 'Bo', jobTitle: 'Smith', description: 'Makes tools.' },
    ]);
    app.fake.enqueue(textScript('Ada here.'));
    await say(conversationId, 'Ada, hello');
    app.fake.enqueue(textScript('Bo here.'));
    const res = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'And you?', npcId: npcIds[1] },
    });
    const frames = await collectFrames(res);
    expect(frames[0]).toMatchObject({ type: 'start', npc: { name: 'Bo' } });
    const req = streamed().at(-1)!;
    expect(req.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'Ada, hello' },
      { role: 'assistant', content: '[Ada]: Ada here.' },
      { role: 'user', content: 'And you?' },
    ]);
    expect(promptOf(req)).toContain('# Others in this conversation\n- Ada (Librarian): Keeps the stacks.');
    expect(promptOf(req)).not.toContain('Knows every book');
  });

  it('in a solo Conversation: history byte-identical to what was said', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    app.fake.enqueue(textScript('Exactly this reply.'));
    await say(conversationId, 'First');
    await say(conversationId, 'Second');
    expect(streamed().at(-1)!.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'First' },
      { role: 'assistant', content: 'Exactly this reply.' },
      { role: 'user', content: 'Second' },
    ]);
  });
});
