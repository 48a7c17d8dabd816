import { describe, expect, it } from 'vitest';
import {
  flattenText,
  foldPart,
  foldParts,
  type Part,
  readParts,
  settleRunningTools,
} from '../../src/parts/index.ts';

describe('the Part fold', () => {
  it('makes a 400-delta reply one text Part', () => {
    const deltas = Array.from({ length: 400 }, (_, i) => ({ type: 'text', text: `w${i} ` }));
    const parts = foldParts(deltas);
    expect(parts).toHaveLength(1);
    expect(parts[0]).toEqual({ type: 'text', text: deltas.map((d) => d.text).join('') });
  });

  it('keeps Parts in the order they happened: reasoning, tool, text', () => {
    const parts = foldParts([
      { type: 'reasoning', text: 'Let me ' },
      { type: 'reasoning', text: 'look.' },
      { type: 'tool', id: 'c1', name: 'search', state: 'running' },
      { type: 'tool', id: 'c1', input: { q: 'x' }, state: 'running' },
      { type: 'tool', id: 'c1', state: 'done', output: { hits: 2 } },
      { type: 'text', text: 'Found ' },
      { type: 'text', text: 'two.' },
    ]);
    expect(parts).toEqual([
      { type: 'reasoning', text: 'Let me look.' },
      { type: 'tool', id: 'c1', name: 'search', input: { q: 'x' }, state: 'done', output: { hits: 2 } },
      { type: 'text', text: 'Found two.' },
    ]);
  });

  it('lands a tool failure on its call, even after other Parts', () => {
    const parts = foldParts([
      { type: 'tool', id: 'a', name: 'run', input: {}, state: 'running' },
      { type: 'tool', id: 'b', name: 'read', input: {}, state: 'running' },
      { type: 'text', text: 'waiting' },
      { type: 'tool', id: 'a', state: 'failed', error: 'exit 1' },
    ]);
    expect(parts.map((p) => p.type)).toEqual(['tool', 'tool', 'text']);
    expect(parts[0]).toMatchObject({ id: 'a', state: 'failed', error: 'exit 1', name: 'run' });
    expect(parts[1]).toMatchObject({ id: 'b', state: 'running' });
  });

  it('never reopens a finished call', () => {
    const parts = foldParts([
      { type: 'tool', id: 'a', name: 'run', state: 'done', output: 1 },
      { type: 'tool', id: 'a', state: 'running' },
    ]);
    expect(parts[0]).toMatchObject({ state: 'done', output: 1 });
  });

  it('ignores unknown Part types and malformed fragments instead of failing', () => {
    const before: Part[] = [{ type: 'text', text: 'a' }];
    expect(foldPart(before, { type: 'image', url: 'x' })).toBe(before);
    expect(foldPart(before, null)).toBe(before);
    expect(foldPart(before, { type: 'text' })).toBe(before);
    expect(foldPart(before, { type: 'text', text: 'b' })).toEqual([{ type: 'text', text: 'ab' }]);
  });

  it('separates runs of the same kind split by another kind', () => {
    const parts = foldParts([
      { type: 'text', text: 'one' },
      { type: 'reasoning', text: 'hmm' },
      { type: 'text', text: 'two' },
    ]);
    expect(parts).toHaveLength(3);
  });

  it('shares untouched Parts so a renderer can compare by identity', () => {
    const first = foldParts([{ type: 'reasoning', text: 'r' }]);
    const next = foldPart(first, { type: 'text', text: 't' });
    expect(next[0]).toBe(first[0]);
  });

  it('reads stored Parts, dropping unknown kinds', () => {
    expect(
      readParts([
        { type: 'text', text: 'x' },
        { type: 'future', data: 1 },
      ]),
    ).toEqual([{ type: 'text', text: 'x' }]);
    expect(readParts(null)).toEqual([]);
  });

  it('settles calls still running as failed with the reason', () => {
    const parts = settleRunningTools(
      [
        { type: 'tool', id: 'a', state: 'running' },
        { type: 'tool', id: 'b', state: 'done' },
      ],
      'Stopped.',
    );
    expect(parts).toEqual([
      { type: 'tool', id: 'a', state: 'failed', error: 'Stopped.' },
      { type: 'tool', id: 'b', state: 'done' },
    ]);
  });
});

describe('flat text', () => {
  it('is text Parts only: reasoning and tools never leak into it', () => {
    const text = flattenText([
      { type: 'reasoning', text: 'SECRET THOUGHT' },
      { type: 'text', text: 'Hello.' },
      { type: 'tool', id: 'a', name: 'x', state: 'done', output: 'TOOL OUTPUT' },
      { type: 'text', text: 'Bye.' },
    ]);
    expect(text).toBe('Hello.\n\nBye.');
  });
});
