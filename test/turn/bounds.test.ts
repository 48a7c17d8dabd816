import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Frame, foldParts } from '../../src/parts/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import type { Reply } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { settled, setupConversation } from '../support/turns.ts';

const MAX_CHARS = 5000;
const MAX_MS = 2000;
const MAX_PARTS = 200;
let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp({ replyLimits: { maxChars: MAX_CHARS, maxMs: MAX_MS, maxParts: MAX_PARTS } });
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

const partsOf = (frames: Frame[]) => foldParts(frames.flatMap((f) => (f.type === 'part' ? [f.part] : [])));

/** A Provider that never finishes: a word every `everyMs` until the server hangs up. Resolves with how many. */
function endless(everyMs: number): { script: (r: Reply) => Promise<void>; sent: Promise<number> } {
  let done: (n: number) => void = () => {};
  const sent = new Promise<number>((r) => {
    done = r;
  });
  const script = async (r: Reply) => {
    let n = 0;
    while (!r.clientGone && n < 1_000_000) {
      r.text('lorem ');
      n++;
      await r.wait(everyMs);
    }
    done(n);
  };
  return { script, sent };
}

describe('one reply is bounded, whatever the Provider does', () => {
  it('a Model that never stops writing is ended past the character limit; what arrived is kept', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    const provider = endless(0);
    app.fake.enqueue(provider.script);
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Go' } }),
    );
    // The server hung up on the Provider (the fault fired): it stopped sending soon after the limit.
    const sent = await provider.sent;
    expect(sent * 'lorem '.length).toBeLessThan(MAX_CHARS * 4);
    const error = frames.find((f) => f.type === 'error');
    expect(error).toMatchObject({ code: 'REPLY_TOO_LONG' });
    expect((error as { message: string }).message).toContain('5,000 characters');
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'failed' });
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply?.status).toBe('failed');
    // Ended at the fragment that crossed the limit (kept, with whatever was already on its way).
    expect(reply?.text.length).toBeGreaterThan(MAX_CHARS);
    expect(reply?.text.length).toBeLessThan(MAX_CHARS * 1.5);
    expect(reply?.text).toMatch(/^(lorem )+$/);
    expect(reply?.parts).toEqual(partsOf(frames));
    // The next turn works as ever.
    app.fake.enqueue((r) => {
      r.text('Fine.');
      r.finish();
    });
    const next = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Again' } }),
    );
    expect(next.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
  });

  it('a Provider alternating one-character reasoning and text is ended past the Parts limit; what arrived is kept', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    let sent = 0;
    app.fake.enqueue(async (r) => {
      // Each delta starts a new Part: unbounded, a million of them, each copying all before it.
      while (!r.clientGone && sent < 100_000) {
        if (sent % 2) r.text('b');
        else r.reasoning('a');
        sent++;
        if (sent % 20 === 0) await r.wait(0);
      }
    });
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Go' } }),
    );
    // The server hung up on the Provider soon after the limit, far below the character limit.
    expect(sent).toBeLessThan(MAX_PARTS * 20);
    const error = frames.find((f) => f.type === 'error');
    expect(error).toMatchObject({ code: 'REPLY_TOO_LONG' });
    expect((error as { message: string }).message).toContain('200 parts');
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply?.status).toBe('failed');
    expect(reply?.parts.length).toBeGreaterThan(MAX_PARTS);
    expect(reply?.parts.length).toBeLessThan(MAX_PARTS * 1.5);
    expect(reply?.parts).toEqual(partsOf(frames));
  });

  it('a call whose arguments never stop streaming is ended past the character limit; what it sent is kept', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    let sent = 0;
    app.fake.enqueue(async (r) => {
      r.toolCallStart(0, 'call_big', 'search', '{"q":"');
      while (!r.clientGone && sent < 1_000_000) {
        r.toolCallArgs(0, 'lorem ');
        sent++;
        await r.wait(0);
      }
    });
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Go' } }),
    );
    // The server hung up on the Provider soon after the limit, though no frame went out meanwhile.
    expect(sent * 'lorem '.length).toBeLessThan(MAX_CHARS * 4);
    expect(frames.find((f) => f.type === 'error')).toMatchObject({ code: 'REPLY_TOO_LONG' });
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply?.status).toBe('failed');
    const [call] = reply?.parts ?? [];
    expect(call).toMatchObject({ type: 'tool', id: 'call_big', name: 'search', state: 'failed' });
    expect((call as { input: string }).input).toMatch(/^\{"q":"(lorem )+/);
    expect(reply?.parts).toEqual(partsOf(frames));
  });

  it('a Provider that trickles a word at a time is ended at the time limit, never waiting for silence', async () => {
    const { conversationId } = await setupConversation(app, cookie);
    const provider = endless(100);
    app.fake.enqueue(provider.script);
    const started = Date.now();
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Go' } }),
    );
    await provider.sent;
    expect(Date.now() - started).toBeGreaterThanOrEqual(MAX_MS);
    expect(frames.find((f) => f.type === 'error')).toMatchObject({ code: 'REPLY_TIME_LIMIT' });
    const [, reply] = await settled(app, cookie, conversationId);
    expect(reply?.status).toBe('failed');
    expect(reply?.error).toContain('2 s');
    expect(reply?.text).toMatch(/^(lorem )+$/);
    expect(reply?.parts).toEqual(partsOf(frames));
  });
});
