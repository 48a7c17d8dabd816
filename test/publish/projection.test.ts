import { describe, expect, it } from 'vitest';
import { assertValidRecord } from '../../src/lexicon/index.ts';
import type { Part } from '../../src/parts/index.ts';
import {
  type PublishTurn,
  projectSession,
  projectTurn,
  REDACTION_BAR,
  type Resolution,
  redactedText,
  referencesOf,
} from '../../src/publish/projection.ts';

const sessionUri = 'at://did:plc:alice/click.aligned.chat.session/3kaaaaaaaaaa2';
const empty: Resolution = { refs: new Map(), mentions: new Map() };
const turn = (parts: Part[], extra: Partial<PublishTurn> = {}): PublishTurn => ({
  messageId: 'm1',
  role: 'npc',
  parts,
  createdAt: new Date('2026-11-01T10:00:00Z'),
  provider: 'openai',
  model: 'gpt-x',
  ...extra,
});

describe('the projection', () => {
  it('publishes text Parts only: reasoning and tool output never appear', () => {
    const { record, problems } = projectTurn(
      turn([
        { type: 'reasoning', text: 'PRIVATE REASONING' },
        {
          type: 'tool',
          id: 'c',
          name: 'search',
          input: { q: 'maps' },
          state: 'done',
          output: 'SECRET OUTPUT',
        },
        { type: 'text', text: 'Found maps.' },
      ]),
      1,
      {},
      { sessionUri, resolution: empty },
    );
    expect(problems).toEqual([]);
    expect(record).toEqual({
      $type: 'click.aligned.chat.message',
      session: sessionUri,
      role: 'assistant',
      createdAt: '2026-11-01T10:00:00.000Z',
      model: 'openai/gpt-x',
      text: 'Found maps.',
      steps: [{ name: 'search', summary: 'search({"q":"maps"})' }],
    });
    expect(JSON.stringify(record)).not.toMatch(/PRIVATE|SECRET/);
    assertValidRecord('click.aligned.chat.message', record);
  });

  it('a withheld turn is a visible hole: withheld, with no text, steps, refs or mentions', () => {
    const { record } = projectTurn(
      turn([{ type: 'text', text: 'see at://did:plc:bob/app.bsky.feed.post/3k2 and @bob.test' }]),
      0,
      { withheld: true },
      { sessionUri, resolution: empty },
    );
    expect(record).toEqual({
      $type: 'click.aligned.chat.message',
      session: sessionUri,
      role: 'assistant',
      createdAt: '2026-11-01T10:00:00.000Z',
      model: 'openai/gpt-x',
      withheld: true,
    });
    assertValidRecord('click.aligned.chat.message', record);
  });

  it('replaces each covered span with one fixed-width bar, whatever its length', () => {
    const parts: Part[] = [{ type: 'text', text: 'My password is hunter2 and my PIN is 1234567890.' }];
    const text = redactedText(parts, [
      { start: 15, end: 22 },
      { start: 37, end: 47 },
    ]);
    expect(text).toBe(`My password is ${REDACTION_BAR} and my PIN is ${REDACTION_BAR}.`);
    expect(text).not.toMatch(/hunter2|1234567890/);
    // Overlapping and touching spans are one run; a span past the end is clipped.
    expect(
      redactedText(
        [{ type: 'text', text: 'abcdefghij' }],
        [
          { start: 1, end: 4 },
          { start: 3, end: 6 },
          { start: 6, end: 7 },
          { start: 9, end: 99 },
        ],
      ),
    ).toBe(`a${REDACTION_BAR}hi${REDACTION_BAR}`);
  });

  it('marks failed steps and takes the Player’s summary, refusing one over 250 characters', () => {
    const t = turn([
      { type: 'tool', id: 'a', name: 'run', input: { cmd: 'ls' }, state: 'failed', error: 'boom' },
      { type: 'tool', id: 'b', name: 'read', input: {}, state: 'done' },
    ]);
    const ok = projectTurn(t, 0, { steps: ['Listed the files', null] }, { sessionUri, resolution: empty });
    expect(ok.record.steps).toEqual([
      { name: 'run', summary: 'Listed the files', failed: true },
      { name: 'read', summary: 'read({})' },
    ]);
    const long = projectTurn(t, 0, { steps: ['x'.repeat(251)] }, { sessionUri, resolution: empty });
    expect(long.problems.map((p) => p.code)).toEqual(['SUMMARY_TOO_LONG']);
  });

  it('refuses text longer than the lexicon allows, naming the turn, never truncating', () => {
    const { record, problems } = projectTurn(
      turn([{ type: 'text', text: 'y'.repeat(15_001) }]),
      4,
      {},
      {
        sessionUri,
        resolution: empty,
      },
    );
    expect(problems).toMatchObject([{ code: 'TEXT_TOO_LONG', turn: 5 }]);
    expect(problems[0]!.message).toMatch(/Turn 5 is too long/);
    expect(record.text?.length).toBe(15_001);
  });

  it('turns links and @handles into strongRefs and DIDs, and reports the ones it cannot resolve', () => {
    const t = turn(
      [
        {
          type: 'text',
          text: 'As https://bsky.app/profile/bob.test/post/3kpost1 says, ask @Bob.test or @carol.test.',
        },
      ],
      { role: 'player' },
    );
    const wanted = referencesOf(t, { refs: ['at://did:plc:dan/app.bsky.feed.post/3kpost2'] });
    expect(wanted.pointers.map((p) => `${p.actor}/${p.rkey}`)).toEqual([
      'bob.test/3kpost1',
      'did:plc:dan/3kpost2',
    ]);
    expect(wanted.accounts).toEqual(['bob.test', 'carol.test']);
    const resolution: Resolution = {
      refs: new Map([
        [
          'at://bob.test/app.bsky.feed.post/3kpost1',
          { uri: 'at://did:plc:bob/app.bsky.feed.post/3kpost1', cid: 'bafyreia' },
        ],
        ['at://did:plc:dan/app.bsky.feed.post/3kpost2', null],
      ]),
      mentions: new Map([
        ['bob.test', 'did:plc:bob'],
        ['carol.test', null],
      ]),
    };
    const { record, problems } = projectTurn(
      t,
      0,
      { refs: ['at://did:plc:dan/app.bsky.feed.post/3kpost2'] },
      {
        sessionUri,
        resolution,
      },
    );
    expect(record.refs).toEqual([{ uri: 'at://did:plc:bob/app.bsky.feed.post/3kpost1', cid: 'bafyreia' }]);
    expect(record.mentions).toEqual(['did:plc:bob']);
    expect(record.role).toBe('user');
    expect(record.model).toBeUndefined();
    expect(problems.map((p) => p.code)).toEqual(['UNRESOLVED_REF', 'UNRESOLVED_MENTION']);
  });

  it('does not publish a mention or link that sits under a redaction', () => {
    const text = 'Ask @secret.test about it.';
    const t = turn([{ type: 'text', text }], { role: 'player' });
    const wanted = referencesOf(t, { redactions: [{ start: 4, end: 16 }] });
    expect(wanted.accounts).toEqual([]);
  });

  it('describes the session: title, when it began, who was talked to — never their prompts', () => {
    const record = projectSession({
      title: 'Maps',
      createdAt: new Date('2026-11-01T09:00:00Z'),
      agents: [
        { name: 'Ada', jobTitle: 'Librarian', description: 'Keeps   the maps.', model: 'openai/gpt-x' },
      ],
    });
    expect(record).toEqual({
      $type: 'click.aligned.chat.session',
      title: 'Maps',
      createdAt: '2026-11-01T09:00:00.000Z',
      agents: [{ name: 'Ada', role: 'Librarian', description: 'Keeps the maps.', model: 'openai/gpt-x' }],
    });
    assertValidRecord('click.aligned.chat.session', record);
  });
});
