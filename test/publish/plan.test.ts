import { describe, expect, it } from 'vitest';
import { MESSAGE, SESSION } from '../../src/lexicon/index.ts';
import { choose, type Loaded, lookupsOf, type PublishInput, plan } from '../../src/publish/plan.ts';
import type { PublishTurn, Resolution } from '../../src/publish/projection.ts';
import type { Draft, PublishedRecord } from '../../src/publish/store.ts';
import { MAX_COVERED_CHARS, MAX_REDACTIONS } from '../../src/redaction/index.ts';

// The pure plan, fed plain values: what publishing decides from the turns, the draft and the records already on
// the PDS, with no database and no network (those are service.ts's).

const DID = 'did:plc:alice';
const ADA = '11111111-1111-4111-8111-111111111111';
const BEN = '22222222-2222-4222-8222-222222222222';
const empty: Resolution = { refs: new Map(), mentions: new Map() };

const turn = (messageId: string, text: string, role: 'player' | 'npc' = 'npc', npcId: string | null = ADA) =>
  ({
    messageId,
    role,
    npcId: role === 'npc' ? npcId : null,
    parts: [{ type: 'text', text }],
    createdAt: new Date('2026-11-01T10:00:00Z'),
    provider: role === 'npc' ? 'openai' : null,
    model: role === 'npc' ? 'gpt-x' : null,
  }) satisfies PublishTurn;

const TURNS = [turn('p1', 'Where is the lighthouse?', 'player'), turn('a1', 'North of the harbour.')];

const loaded = (over: Partial<Loaded> = {}): Loaded => ({
  did: DID,
  turns: TURNS,
  participants: [
    { id: ADA, name: 'Ada', jobTitle: 'Keeper', description: 'ADA OWN DESCRIPTION' },
    { id: BEN, name: 'Ben', jobTitle: 'Sailor', description: '' },
  ],
  existing: [],
  sessionRkey: undefined,
  draft: undefined,
  skills: [],
  everyId: TURNS.map((t) => t.messageId),
  avatars: new Map(),
  ...over,
});

/** Plans as publishing does: choose, then plan (no lookups: nothing here links anywhere). */
const planOf = (l: Loaded, input: PublishInput = { choices: {} }) =>
  plan(l, input, choose(l.turns, input, l.draft), empty);

/** The records of a plan as the PDS holds them once written. */
const written = (records: PublishedRecord[]): PublishedRecord[] =>
  records.filter((r) => r.pending !== 'delete').map((r) => ({ ...r, cid: `cid-${r.rkey}`, pending: null }));

const draft = (over: Partial<Draft> = {}): Draft => ({
  sessionRkey: '3kaaaaaaaaaa2',
  title: null,
  choices: {},
  words: {},
  agents: {},
  ...over,
});

const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
};

describe('choose', () => {
  it('refuses a Conversation without turns, a path that changed, and a choice for a turn not there', () => {
    expect(code(() => choose([], { choices: {} }, undefined))).toBe('NOTHING_TO_PUBLISH');
    expect(code(() => choose(TURNS, { choices: {}, path: ['p1'] }, undefined))).toBe('CONVERSATION_CHANGED');
    expect(code(() => choose(TURNS, { choices: {}, path: ['p1', 'x'] }, undefined))).toBe(
      'CONVERSATION_CHANGED',
    );
    expect(code(() => choose(TURNS, { choices: { gone: { withheld: true } } }, undefined))).toBe(
      'INVALID_BODY',
    );
    expect(code(() => choose(TURNS, { choices: {}, path: ['p1', 'a1'] }, undefined))).toBeUndefined();
  });

  it('takes the request’s choice for a turn it names and the draft’s for the others', () => {
    const d = draft({ choices: { p1: { withheld: true }, a1: { withheld: true } } });
    const chosen = choose(TURNS, { choices: { a1: { keepTime: true } } }, d);
    expect(chosen.choices).toEqual({ p1: { withheld: true }, a1: { keepTime: true } });
    expect(chosen.published.texts.has('p1')).toBe(false);
    expect(chosen.published.texts.get('a1')).toBe('North of the harbour.');
  });

  it('keeps covering the words of turns gone since, until the Player lets them go', () => {
    const d = draft({ words: { gone: ['harbour'] } });
    const kept = choose(TURNS, { choices: {} }, d);
    expect(kept.words).toEqual({ gone: ['harbour'] });
    expect(kept.published.texts.get('a1')).not.toContain('harbour');
    const forgot = choose(TURNS, { choices: {}, forgetRemoved: true }, d);
    expect(forgot.words).toEqual({});
    expect(forgot.published.texts.get('a1')).toContain('harbour');
  });
  it('refuses a Conversation that would cover more than MAX_REDACTIONS selections or MAX_COVERED_CHARS characters', () => {
    const text = 'x'.repeat(2 * MAX_REDACTIONS);
    const turns = Array.from({ length: 11 }, (_, i) => turn(`t${i}`, text));
    // 500 a turn (the most one turn takes): ten turns are MAX_REDACTIONS, an eleventh's one more is too many.
    const spans = (n: number) => Array.from({ length: n }, (_, i) => ({ start: 2 * i, end: 2 * i + 1 }));
    const choices = Object.fromEntries(
      turns.slice(0, 10).map((t) => [t.messageId, { redactions: spans(500) }]),
    );
    expect(code(() => choose(turns, { choices }, undefined))).toBeUndefined();
    const over = { ...choices, t10: { redactions: spans(1) } };
    expect(code(() => choose(turns, { choices: over }, undefined))).toBe('TOO_MANY_REDACTIONS');
    // The draft's choices for turns the request does not name count, and so do the words of turns gone.
    expect(code(() => choose(turns, { choices: {} }, draft({ choices: over })))).toBe('TOO_MANY_REDACTIONS');
    const gone = draft({ choices, words: { gone: ['harbour'] } });
    expect(code(() => choose(turns, { choices: {} }, gone))).toBe('TOO_MANY_REDACTIONS');
    expect(code(() => choose(turns, { choices: {}, forgetRemoved: true }, gone))).toBeUndefined();
    // Few selections, but long ones: overlapping, each is a word of its own, so their characters add up.
    const long = turn('long', 'abcdefghij'.repeat(MAX_COVERED_CHARS / 10));
    const nested = (n: number) => Array.from({ length: n }, (_, i) => ({ start: i, end: MAX_COVERED_CHARS }));
    const words = (n: number) => ({ choices: { long: { redactions: nested(n) } } });
    expect(code(() => choose([long], words(1), undefined))).toBeUndefined();
    expect(code(() => choose([long], words(2), undefined))).toBe('TOO_MANY_REDACTIONS');
  });
});

describe('lookupsOf', () => {
  const linking = [turn('p1', 'Ask @bob.test', 'player'), turn('a1', 'Or @carol.test')];
  it('looks up every published turn’s mentions when publishing, only the checked ones when previewing', () => {
    const chosen = choose(linking, { choices: {} }, undefined);
    expect(lookupsOf(linking, chosen, 'all').accounts).toEqual(['bob.test', 'carol.test']);
    expect(lookupsOf(linking, chosen, new Set(['a1'])).accounts).toEqual(['carol.test']);
    expect(lookupsOf(linking, chosen, new Set()).accounts).toEqual([]);
  });

  it('a withheld turn asks for nothing', () => {
    const chosen = choose(linking, { choices: { p1: { withheld: true } } }, undefined);
    expect(lookupsOf(linking, chosen, 'all').accounts).toEqual(['carol.test']);
  });
});

describe('plan', () => {
  it('creates the session and each turn, with TIDs after the session’s in reading order', () => {
    const p = planOf(loaded());
    expect(p.problems).toEqual([]);
    expect(p.records.map((r) => [r.collection, r.messageId, r.position, r.pending])).toEqual([
      [SESSION, null, 0, 'create'],
      [MESSAGE, 'p1', 1, 'create'],
      [MESSAGE, 'a1', 2, 'create'],
    ]);
    const rkeys = p.records.map((r) => r.rkey);
    expect([...rkeys].sort()).toEqual(rkeys);
    expect(p.sessionRkey).toBe(rkeys[0]);
    expect(p.records[1]!.record.session).toBe(`at://${DID}/${SESSION}/${p.sessionRkey}`);
    expect(p.title).toBe(p.defaultTitle);
  });

  it('keeps the session’s rkey of the publication, else of the draft', () => {
    expect(planOf(loaded({ draft: draft() })).sessionRkey).toBe('3kaaaaaaaaaa2');
    expect(planOf(loaded({ draft: draft(), sessionRkey: '3kbbbbbbbbbb2' })).sessionRkey).toBe(
      '3kbbbbbbbbbb2',
    );
  });

  it('leaves unchanged records alone, updates a changed one under its rkey, creates a new turn after the last', () => {
    const first = planOf(loaded());
    const existing = written(first.records);
    const again = planOf(loaded({ existing, sessionRkey: first.sessionRkey }));
    expect(again.records.map((r) => r.pending)).toEqual([null, null, null]);

    const edited = planOf(loaded({ existing, sessionRkey: first.sessionRkey }), {
      choices: { a1: { redactions: [{ start: 0, end: 5 }] } },
    });
    const a1 = edited.records.find((r) => r.messageId === 'a1')!;
    expect(a1.pending).toBe('update');
    expect(a1.rkey).toBe(existing.find((r) => r.messageId === 'a1')!.rkey);

    const more = [...TURNS, turn('p2', 'Thanks!', 'player')];
    const appended = planOf(
      loaded({ turns: more, everyId: ['p1', 'a1', 'p2'], existing, sessionRkey: first.sessionRkey }),
    );
    const p2 = appended.records.find((r) => r.messageId === 'p2')!;
    expect(p2.pending).toBe('create');
    expect(existing.every((r) => r.rkey < p2.rkey)).toBe(true);
  });

  it('a record whose write is still owed (a write that failed, an unfinished delete) is written by the next plan, though it is unchanged', () => {
    const first = planOf(loaded());
    // a1's update failed; p1 was left to delete by an unpublish that stopped part-way (it is still out).
    const owed = written(first.records).map((r) =>
      r.messageId === 'a1'
        ? { ...r, pending: 'update' as const }
        : r.messageId === 'p1'
          ? { ...r, pending: 'delete' as const }
          : r,
    );
    const again = planOf(loaded({ existing: owed, sessionRkey: first.sessionRkey }));
    expect(again.records.map((r) => [r.messageId, r.pending])).toEqual([
      [null, null],
      ['p1', 'update'],
      ['a1', 'update'],
    ]);
  });

  it('deletes the record of a turn that has left the path, and keeps the draft’s choice for another branch', () => {
    const first = planOf(loaded());
    const existing = written(first.records);
    const regenerated = [TURNS[0]!, turn('a2', 'South, past the pier.')];
    const p = planOf(
      loaded({
        turns: regenerated,
        everyId: ['p1', 'a1', 'a2'],
        existing,
        sessionRkey: first.sessionRkey,
        draft: draft({ choices: { a1: { withheld: true }, lost: { withheld: true } } }),
      }),
    );
    expect(p.records.filter((r) => r.pending === 'delete').map((r) => r.messageId)).toEqual(['a1']);
    expect(p.records.find((r) => r.messageId === 'a2')!.pending).toBe('create');
    // a1 is on another branch still (it may come back withheld); `lost` is no Message of the Conversation.
    expect(p.draft.choices).toEqual({ a1: { withheld: true } });
  });

  it('names only NPCs with a published turn, in the Player’s words, and keeps agent choices for its NPCs only', () => {
    const l = loaded({ turns: [...TURNS, turn('b1', 'Aye.', 'npc', BEN)], everyId: ['p1', 'a1', 'b1'] });
    const p = planOf(l, {
      choices: { b1: { withheld: true } },
      agents: {
        [ADA]: { description: 'The keeper.' },
        '33333333-3333-4333-8333-333333333333': { description: 'x' },
      },
    });
    const session = p.records[0]!.record as { agents: { name: string; description?: string }[] };
    expect(session.agents).toEqual([{ name: 'Ada', role: 'Keeper', description: 'The keeper.' }]);
    expect(JSON.stringify(p.records)).not.toContain('ADA OWN DESCRIPTION');
    expect(p.agents).toEqual([
      { npcId: ADA, name: 'Ada', jobTitle: 'Keeper', description: 'ADA OWN DESCRIPTION', avatarUrl: null },
    ]);
    expect(p.draft.agents).toEqual({ [ADA]: { description: 'The keeper.' } });
  });

  it('publishes an NPC’s picture only when the Player ticked it, and offers it only when it can be published', () => {
    const cid = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';
    const avatar = { cid, mimeType: 'image/png', size: 1234 } as const;
    const withPicture = loaded({
      participants: [
        { id: ADA, name: 'Ada', jobTitle: 'Keeper', description: '', avatarUrl: '/api/npcs/a/avatar' },
      ],
      avatars: new Map([[ADA, avatar]]),
    });
    const agentsOf = (p: ReturnType<typeof planOf>) =>
      (p.records[0]!.record as { agents: { avatar?: unknown }[] }).agents;
    const unticked = planOf(withPicture);
    expect(agentsOf(unticked)[0]!.avatar).toBeUndefined();
    expect(unticked.agents[0]!.avatarUrl).toBe('/api/npcs/a/avatar');
    const ticked = planOf(withPicture, { choices: {}, agents: { [ADA]: { avatar: true } } });
    expect(agentsOf(ticked)[0]!.avatar).toEqual({
      $type: 'blob',
      ref: { $link: cid },
      mimeType: 'image/png',
      size: 1234,
    });
    // No picture that can be published: nothing offered, whatever the tick.
    const none = planOf(loaded({ participants: withPicture.participants }), {
      choices: {},
      agents: { [ADA]: { avatar: true } },
    });
    expect(agentsOf(none)[0]!.avatar).toBeUndefined();
    expect(none.agents[0]!.avatarUrl).toBeNull();
  });

  it('titles the session with the Player’s title, the draft’s when none is sent, the default when emptied', () => {
    const d = draft({ title: 'From the draft' });
    expect(planOf(loaded({ draft: d })).title).toBe('From the draft');
    expect(planOf(loaded({ draft: d }), { choices: {}, title: 'Mine' }).title).toBe('Mine');
    const emptied = planOf(loaded({ draft: d }), { choices: {}, title: '  ' });
    expect(emptied.title).toBe(emptied.defaultTitle);
    expect(emptied.draft.title).toBeNull();
  });

  it('reports a link not looked up as unchecked, not as a problem', () => {
    const l = loaded({ turns: [turn('p1', 'Ask @bob.test', 'player'), TURNS[1]!] });
    const p = planOf(l);
    expect(p.problems).toEqual([]);
    expect(p.unchecked).toEqual([{ messageId: 'p1', turn: 1, links: ['@bob.test'] }]);
  });
});
