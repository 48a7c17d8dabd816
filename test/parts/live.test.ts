import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyFrame, type Frame, foldParts, type LiveTurn, mergeFrames } from '../../src/parts/index.ts';

/** The browser's side of a turn's stream: frames applied to the live turn, fed as arrays (src/parts/live.ts). */

const start = (messageId: string, npc = 'Ada'): Frame => ({
  type: 'start',
  messageId,
  playerMessageId: 'p-real',
  npc: { id: `n-${npc}`, name: npc },
  provider: 'acme',
  model: 'acme-1',
});
const part = (messageId: string, p: unknown): Frame => ({ type: 'part', messageId, part: p });
const usage = { inputTokens: 3, outputTokens: 4, reasoningTokens: null, cachedInputTokens: null };
const apply = (frames: Frame[], from: LiveTurn = { replies: [] }) => frames.reduce(applyFrame, from);

describe('applying frames', () => {
  it('start adds a streaming reply and gives the optimistic Player Message its real id', () => {
    const live = apply([start('r1')], { player: { id: 'pending-1' }, replies: [] });
    expect(live.player).toEqual({ id: 'p-real' });
    expect(live.replies).toEqual([
      {
        id: 'r1',
        role: 'npc',
        npcName: 'Ada',
        parts: [],
        status: 'streaming',
        error: null,
        provider: 'acme',
        model: 'acme-1',
        usage: null,
        costUsd: null,
      },
    ]);
    // Following a reply (no Player Message of ours): none is made up.
    expect(apply([start('r1')]).player).toBeUndefined();
  });

  it('folds each part into its own reply (a Party hands over mid-turn), the other reply untouched', () => {
    const first = apply([
      start('r1'),
      part('r1', { type: 'text', text: 'Over to ' }),
      part('r1', { type: 'text', text: 'Bo.' }),
    ]);
    const second = apply([start('r2', 'Bo'), part('r2', { type: 'text', text: 'Hi.' })], first);
    expect(second.replies.map((r) => r.parts)).toEqual([
      [{ type: 'text', text: 'Over to Bo.' }],
      [{ type: 'text', text: 'Hi.' }],
    ]);
    // React compares by identity: a frame for one reply leaves the other the same object.
    expect(second.replies[0]).toBe(first.replies[0]);
  });

  it('ends a reply with its status and usage; an error lands on its reply, or on the turn when it names none', () => {
    const live = apply([
      start('r1'),
      part('r1', { type: 'text', text: 'Half' }),
      { type: 'error', messageId: 'r1', code: 'PROVIDER_UNFINISHED', message: 'Not finished.' },
      { type: 'finish', messageId: 'r1', status: 'failed', usage },
      { type: 'error', messageId: null, code: 'INTERNAL', message: 'The reply could not be completed.' },
    ]);
    expect(live.replies[0]).toMatchObject({ status: 'failed', usage, error: 'Not finished.' });
    expect(live.error).toBe('The reply could not be completed.');
  });

  it('ignores a Part kind it does not know and frames of a reply it never started (ADR 0007)', () => {
    const before = apply([start('r1'), part('r1', { type: 'text', text: 'Hi' })]);
    const after = apply(
      [part('r1', { type: 'hologram', id: 'x' }), part('r9', { type: 'text', text: '!' })],
      before,
    );
    expect(after.replies).toEqual(before.replies);
  });

  it('a truncated finish is shown as such (issue 27)', () => {
    const live = apply([start('r1'), { type: 'finish', messageId: 'r1', status: 'truncated', usage }]);
    expect(live.replies[0]?.status).toBe('truncated');
  });
});

describe('any frames', () => {
  const id = fc.constantFrom('r1', 'r2');
  const fragment = fc.oneof(
    fc.record({ type: fc.constantFrom('text', 'reasoning'), text: fc.string({ maxLength: 4 }) }),
    fc.record({
      type: fc.constant('tool'),
      id: fc.constantFrom('a', 'b'),
      state: fc.constantFrom('running', 'done', 'failed'),
      output: fc.option(fc.integer(), { nil: undefined }),
    }),
    fc.constant({ type: 'unknown-kind' }),
  );
  const frames = fc.array(fc.record({ id, fragment }), { maxLength: 40 });

  it('each reply holds the fold of its own part frames, whatever their interleaving; no state is changed in place', () => {
    fc.assert(
      fc.property(frames, (xs) => {
        const begun = apply([start('r1'), start('r2', 'Bo')]);
        const snapshot = structuredClone(begun);
        const live = apply(
          xs.map((x) => part(x.id, x.fragment)),
          begun,
        );
        expect(begun).toEqual(snapshot);
        for (const r of live.replies)
          expect(r.parts).toEqual(foldParts(xs.filter((x) => x.id === r.id).map((x) => x.fragment)));
      }),
    );
  });

  it('the SSE writer joining adjacent text frames (mergeFrames) changes nothing the browser ends with', () => {
    fc.assert(
      fc.property(frames, (xs) => {
        const sent = xs.map((x) => part(x.id, x.fragment));
        const merged: Frame[] = [];
        for (const f of sent) {
          const joined = merged.length ? mergeFrames(merged.at(-1)!, f) : undefined;
          if (joined) merged[merged.length - 1] = joined;
          else merged.push(f);
        }
        const begun = apply([start('r1'), start('r2', 'Bo')]);
        expect(apply(merged, begun).replies).toEqual(apply(sent, begun).replies);
      }),
    );
  });
});
