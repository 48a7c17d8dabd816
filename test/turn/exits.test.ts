import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Frame, foldParts } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type Reply, words } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { sendAndStop, settled, setupConversation } from '../support/turns.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

const partsOf = (frames: Frame[]) => foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])));
const textOf = (parts: unknown[]) =>
  parts
    .flatMap((p) => ((p as { type: string }).type === 'text' ? [(p as { text: string }).text] : []))
    .join('');

describe('the Player stops the reply', () => {
  it('before the first token: the reply is kept, empty, as stopped', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    let providerSawClose = false;
    let arrived!: () => void;
    const providerHasIt = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    app.fake.enqueue(async (r) => {
      r.chunk({ role: 'assistant' });
      arrived();
      await r.gone;
      providerSawClose = true;
    });
    // Stopped once the Provider has the request (the start frame comes before the call is made).
    const frames = await sendAndStop(app, cookie, conversationId, 'Hello?', async (f) => {
      if (!f.some((x) => x.type === 'start')) return false;
      await providerHasIt;
      return true;
    });
    // Stop is pressed; the stream goes on to the reply's end, which says it was stopped.
    expect(frames.map((f) => f.type)).toEqual(['start', 'finish']);
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'stopped' });
    const [player, reply] = await settled(app, cookie, conversationId);
    expect(player?.text).toBe('Hello?');
    expect(reply).toMatchObject({ status: 'stopped', parts: [], text: '', usage: null });
    // Stopping closes the upstream request too.
    await expect.poll(() => providerSawClose).toBe(true);
  });

  it('mid-text: keeps everything the client saw plus what arrived before the reply unwound', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    const all = words('one two three four five six seven eight nine ten eleven twelve');
    app.fake.enqueue(async (r) => {
      for (const w of all) {
        if (r.clientGone) return;
        r.text(w);
        await r.wait(30);
      }
      r.finish();
    });
    const frames = await sendAndStop(app, cookie, conversationId, 'Count', (f) =>
      textOf(partsOf(f)).includes('three'),
    );
    const seen = textOf(partsOf(frames));
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply?.status).toBe('stopped');
    // The stream went on to the end after Stop: the client saw exactly what is stored.
    expect(reply?.text).toBe(seen);
    expect(reply?.text.length).toBeLessThan(all.join('').length);
    expect(reply?.parts).toEqual([{ type: 'text', text: reply?.text }]);
  });

  it('mid-tool-call: the call is kept with its name and the arguments sent so far, settled as failed because it was stopped', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    app.fake.enqueue(async (r) => {
      r.text('Let me check. ');
      r.toolCallStart(0, 'call_9', 'search', '{"q":');
      await r.wait(20);
      r.toolCallArgs(0, '"weat');
      await r.gone;
    });
    const frames = await sendAndStop(app, cookie, conversationId, 'Weather?', (f) =>
      partsOf(f).some((p) => p.type === 'tool'),
    );
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply?.status).toBe('stopped');
    // The browser watching it saw the call end as it is stored, not "running…" until it reloads.
    expect(partsOf(frames)).toEqual(reply?.parts);
    expect(reply?.parts).toEqual([
      { type: 'text', text: 'Let me check. ' },
      {
        type: 'tool',
        id: 'call_9',
        name: 'search',
        // What the NPC had sent of its arguments when it was stopped (the Stop may beat the second piece).
        input: expect.stringMatching(/^\{"q":("weat)?$/),
        state: 'failed',
        error: 'Stopped before the call finished.',
      },
    ]);
  });
});

describe('the Player goes away (ADR 0037)', () => {
  it('closing the stream does not stop the reply: it is written to the end', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    const all = words('one two three four five six seven eight');
    app.fake.enqueue(async (r) => {
      for (const w of all) {
        r.text(w);
        await r.wait(20);
      }
      r.finish();
    });
    const controller = new AbortController();
    const res = await fetch(`${app.url}/api/conversations/${conversationId}/messages`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Count' }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply).toMatchObject({ status: 'complete', text: all.join('') });
  });
});

describe('usage on the abort path (ADR 0003)', () => {
  it('keeps the usage of the steps that finished before the Player stopped', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    app.fake.enqueue(
      (r) => {
        // Step 1 ends (an ungranted call fails, so the model gets a second step) and reports its usage.
        r.toolCallStart(0, 'call_u', 'lookup', '{}');
        r.finish('tool_calls', { prompt_tokens: 21, completion_tokens: 7 });
      },
      async (r) => {
        for (let i = 0; i < 200 && !r.clientGone; i++) {
          r.text(`s${i} `);
          await r.wait(20);
        }
      },
    );
    const spent = async () =>
      (
        await app.db.sql`select coalesce(sum(tokens), 0)::int as n from daily_spend
          where player_id = (select player_id from conversations where id = ${conversationId})`
      )[0]!.n as number;
    const before = await spent();
    await sendAndStop(app, cookie, conversationId, 'Go', (f) => textOf(partsOf(f)).includes('s2'));
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply?.status).toBe('stopped');
    expect(reply?.usage).toMatchObject({ inputTokens: 21, outputTokens: 7 });
    // The step cut short is charged too (its prompt and what it streamed, estimated): not only the 28 reported.
    expect((await spent()) - before).toBeGreaterThan(28);
  });
});

describe('the Provider fails', () => {
  it('mid-stream with an error: what arrived is kept and the stream ends with an error frame', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    app.fake.enqueue((r) => {
      r.text('Partial ');
      r.text('answer');
      r.streamError('upstream overloaded');
    });
    const res = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie,
      body: { text: 'Go' },
    });
    const frames = await collectFrames(res);
    const error = frames.find((f) => f.type === 'error');
    // Said as what it is, in the Provider's own words too.
    expect(error).toMatchObject({ code: 'PROVIDER_OVERLOADED' });
    expect((error as { message: string }).message).toContain('upstream overloaded');
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'failed' });
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply).toMatchObject({ status: 'failed', text: 'Partial answer' });
    expect(reply?.error).toContain('upstream overloaded');
    expect(reply?.parts).toEqual(partsOf(frames));
  });

  it('when the socket breaks mid-stream: kept, failed, error frame', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    app.fake.enqueue(async (r) => {
      r.text('Half a ');
      r.text('thought');
      await r.wait(20);
      r.drop();
    });
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Go' } }),
    );
    expect(frames.some((f) => f.type === 'error')).toBe(true);
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'failed' });
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply).toMatchObject({ status: 'failed', text: 'Half a thought' });
  });

  it('with an HTTP error before streaming: an error frame with the Provider message, nothing invented', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    app.fake.enqueue((r) => r.fail(404, 'The model `fake-model` does not exist'));
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Go' } }),
    );
    expect(frames.map((f) => f.type)).toEqual(['start', 'error', 'finish']);
    expect((frames[1] as { message: string }).message).toContain('does not exist');
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply).toMatchObject({ status: 'failed', parts: [], usage: null });
  });
});

describe('usage on the failure paths (ADR 0003)', () => {
  /** Step 1 finishes (an ungranted call fails, so there is a step 2) and reports usage; then `second` runs. */
  const afterOneStep = (second: (r: Reply) => void | Promise<void>) => [
    (r: Reply) => {
      r.toolCallStart(0, 'call_f', 'lookup', '{}');
      r.finish('tool_calls', { prompt_tokens: 13, completion_tokens: 4 });
    },
    second,
  ];
  const usageAfter = async (a: TestApp, c: string, scripts: ((r: Reply) => void | Promise<void>)[]) => {
    const { conversationId } = await setupConversation(a, c);
    a.fake.enqueue(...scripts);
    await collectFrames(
      await a.api(`/api/conversations/${conversationId}/messages`, { cookie: c, body: { text: 'Go' } }),
    );
    const [, reply] = await settled(a, c, conversationId);
    return reply!;
  };

  it('a Provider error keeps the usage of the steps that finished', async () => {
    const reply = await usageAfter(
      app,
      cookie,
      afterOneStep((r) => {
        r.text('Partial');
        r.streamError('upstream overloaded');
      }),
    );
    expect(reply.status).toBe('failed');
    expect(reply.usage).toMatchObject({ inputTokens: 13, outputTokens: 4 });
  });

  it('a dropped socket keeps the usage of the steps that finished', async () => {
    const reply = await usageAfter(
      app,
      cookie,
      afterOneStep(async (r) => {
        r.text('Half');
        await r.wait(20);
        r.drop();
      }),
    );
    expect(reply.status).toBe('failed');
    expect(reply.usage).toMatchObject({ inputTokens: 13, outputTokens: 4 });
  });

  it('a silent Provider keeps the usage of the steps that finished', async () => {
    const quiet = await startTestApp({ providerChunkTimeoutMs: 300 });
    try {
      const { cookie: c } = await quiet.signIn();
      const reply = await usageAfter(
        quiet,
        c,
        afterOneStep(async (r) => {
          r.text('Going quiet');
          await r.gone;
        }),
      );
      expect(reply.status).toBe('failed');
      expect(reply.usage).toMatchObject({ inputTokens: 13, outputTokens: 4 });
    } finally {
      await quiet.close();
    }
  });

  it('a clean finish that reports no usage stores null, not zeros', async () => {
    const reply = await usageAfter(app, cookie, [
      (r: Reply) => {
        r.text('No usage here.');
        r.finish('stop', null);
      },
    ]);
    expect(reply.status).toBe('complete');
    expect(reply.usage).toBeNull();
  });
});

describe('a silent Provider', () => {
  it('fails the reply after the configured quiet time, keeping what arrived, instead of hanging the turn', async () => {
    const quiet = await startTestApp({ providerChunkTimeoutMs: 300 });
    try {
      const { cookie: c } = await quiet.signIn();
      const { conversationId } = await setupConversation(quiet, c);
      quiet.fake.enqueue(async (r) => {
        r.text('I will now go quiet');
        await r.gone;
      });
      const frames = await collectFrames(
        await quiet.api(`/api/conversations/${conversationId}/messages`, {
          cookie: c,
          body: { text: 'Hello?' },
        }),
      );
      expect(frames.some((f) => f.type === 'error')).toBe(true);
      expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'failed' });
      const [, reply] = await settled(quiet, c, conversationId);
      expect(reply).toMatchObject({ status: 'failed', text: 'I will now go quiet' });
      expect(reply?.error).toMatch(/sent nothing/);
    } finally {
      await quiet.close();
    }
  });
});
