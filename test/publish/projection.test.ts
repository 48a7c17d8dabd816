import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertValidRecord } from '../../src/lexicon/index.ts';
import type { Part } from '../../src/parts/index.ts';
import {
  defaultTitle,
  type PublishTurn,
  projectSession,
  projectTurn,
  publishedTexts,
  publishedTimes,
  type Resolution,
  referencesOf,
} from '../../src/publish/projection.ts';
import { graphemes } from '../../src/publish/text.ts';
import { makeCover, REDACTION_BAR, type TurnChoice } from '../../src/redaction/index.ts';

const sessionUri = 'at://did:plc:alice/click.aligned.chat.session/3kaaaaaaaaaa2';
/** Hindi heavy in conjuncts: 40 graphemes in 257 bytes of UTF-8. */
const HINDI = 'राष्ट्रीय स्वास्थ्य सांस्कृतिक व्यक्तित्व मनोवैज्ञानिक द्वन्द्वात्मक उज्ज्वलता स्पष्टीकरण। ';
const empty: Resolution = { refs: new Map(), mentions: new Map() };
const noCover = makeCover([]);
/** projectTurn for a Conversation of this one turn. */
const project = (t: PublishTurn, index: number, choice: TurnChoice, resolution = empty) =>
  projectTurn(t, index, choice, {
    sessionUri,
    resolution,
    published: publishedTexts([t], { [t.messageId]: choice }),
    known: { agents: ['Ada'], skills: [] },
  });
const turn = (parts: Part[], extra: Partial<PublishTurn> = {}): PublishTurn => ({
  messageId: 'm1',
  role: 'npc',
  npcId: 'n1',
  parts,
  createdAt: new Date('2026-11-01T10:00:00Z'),
  provider: 'openai',
  model: 'gpt-x',
  ...extra,
});

describe('the projection', () => {
  it('publishes text Parts only: reasoning and tool output never appear', () => {
    const { record, problems } = project(
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
    );
    expect(problems).toEqual([]);
    expect(record).toEqual({
      $type: 'click.aligned.chat.message',
      session: sessionUri,
      role: 'assistant',
      createdAt: '2026-11-01T10:00:00.000Z',
      model: 'openai/gpt-x',
      text: 'Found maps.',
      steps: [{ name: 'tool', summary: 'called a tool' }],
    });
    expect(JSON.stringify(record)).not.toMatch(/PRIVATE|SECRET/);
    assertValidRecord('click.aligned.chat.message', record);
  });

  it('a withheld turn is a visible hole: withheld, with no text, steps, refs, mentions, model or exact time', () => {
    const t = turn([{ type: 'text', text: 'see at://did:plc:bob/app.bsky.feed.post/3k2 and @bob.test' }]);
    const { record } = project({ ...t, createdAt: new Date('2026-11-01T10:17:42.123Z') }, 0, {
      withheld: true,
    });
    // No turn published before it: only its day (UTC).
    expect(record).toEqual({
      $type: 'click.aligned.chat.message',
      session: sessionUri,
      role: 'assistant',
      createdAt: '2026-11-01T00:00:00.000Z',
      withheld: true,
    });
    assertValidRecord('click.aligned.chat.message', record);
    // Kept by the Player: the exact time and the model.
    const kept = project({ ...t, createdAt: new Date('2026-11-01T10:17:42.123Z') }, 0, {
      withheld: true,
      keepTime: true,
      keepModel: true,
    });
    expect(kept.record).toMatchObject({ createdAt: '2026-11-01T10:17:42.123Z', model: 'openai/gpt-x' });
  });

  it('a hole says the time of the last turn published before it, so times never go backwards', () => {
    const at = (id: string, minute: number, role: PublishTurn['role'] = 'npc') =>
      turn([{ type: 'text', text: id }], {
        messageId: id,
        role,
        createdAt: new Date(Date.UTC(2026, 10, 1, 23, minute, 7)),
      });
    const turns = [at('h0', 1), at('p1', 5, 'player'), at('h2', 9), at('h3', 30), at('k4', 40), at('h5', 50)];
    const choices = {
      h0: { withheld: true },
      h2: { withheld: true },
      h3: { withheld: true },
      k4: { withheld: true, keepTime: true },
      h5: { withheld: true },
    };
    const published = publishedTexts(turns, choices);
    const times = turns.map(
      (t, i) =>
        projectTurn(t, i, choices[t.messageId as 'h0'] ?? {}, {
          sessionUri,
          resolution: empty,
          published,
          known: { agents: [], skills: [] },
        }).record.createdAt,
    );
    expect(times).toEqual([
      '2026-11-01T00:00:00.000Z',
      '2026-11-01T23:05:07.000Z',
      '2026-11-01T23:05:07.000Z',
      '2026-11-01T23:05:07.000Z',
      '2026-11-01T23:40:07.000Z',
      '2026-11-01T23:40:07.000Z',
    ]);
    // Whatever the choices, a hole's time is one already published, or the start of a day.
    fc.assert(
      fc.property(
        fc.array(fc.record({ withheld: fc.boolean(), keepTime: fc.boolean() }), {
          minLength: turns.length,
          maxLength: turns.length,
        }),
        (picked) => {
          const cs = Object.fromEntries(turns.map((t, i) => [t.messageId, picked[i]!]));
          const got = publishedTimes(turns, cs);
          const shown = turns
            .filter((_, i) => !picked[i]!.withheld || picked[i]!.keepTime)
            .map((t) => t.createdAt.getTime());
          let last = 0;
          for (const [i, t] of turns.entries()) {
            const time = got.get(t.messageId)!.getTime();
            expect(time).toBeGreaterThanOrEqual(last);
            last = time;
            if (picked[i]!.withheld && !picked[i]!.keepTime)
              expect(shown.includes(time) || time % 86_400_000 === 0).toBe(true);
            else expect(time).toBe(t.createdAt.getTime());
          }
        },
      ),
    );
  });

  it('replaces each covered span with one fixed-width bar, whatever its length', () => {
    const parts: Part[] = [{ type: 'text', text: 'My password is hunter2 and my PIN is 1234567890.' }];
    const redactions = [
      { start: 15, end: 22 },
      { start: 37, end: 47 },
    ];
    const text = publishedTexts([turn(parts)], { m1: { redactions } }).texts.get('m1');
    expect(text).toBe(`My password is ${REDACTION_BAR} and my PIN is ${REDACTION_BAR}.`);
    expect(text).not.toMatch(/hunter2|1234567890/);
    // Overlapping and touching spans are one run; a span past the end is clipped.
    const spans = [
      { start: 1, end: 4 },
      { start: 3, end: 6 },
      { start: 6, end: 7 },
      { start: 9, end: 99 },
    ];
    // (Kana: no word edges to go on to, ADR 0105.)
    expect(
      publishedTexts([turn([{ type: 'text', text: 'あいうえおかきくけこ' }])], {
        m1: { redactions: spans },
      }).texts.get('m1'),
    ).toBe(`あ${REDACTION_BAR}くけ${REDACTION_BAR}`);
    // In a word, the bar goes to the word's edges: what is left of it could spell what it covers.
    expect(
      publishedTexts([turn([{ type: 'text', text: 'abcdefghij klm' }])], {
        m1: { redactions: [{ start: 1, end: 4 }] },
      }).texts.get('m1'),
    ).toBe(`${REDACTION_BAR} klm`);
  });

  it('marks failed steps and takes the Player’s summary, refusing one over 250 characters', () => {
    const t = turn([
      { type: 'tool', id: 'a', name: 'run', input: { cmd: 'ls' }, state: 'failed', error: 'boom' },
      { type: 'tool', id: 'b', name: 'read', input: {}, state: 'done' },
    ]);
    const ok = project(t, 0, { steps: ['Listed the files', null] });
    expect(ok.record.steps).toEqual([
      { name: 'tool', summary: 'Listed the files', failed: true },
      { name: 'tool', summary: 'called a tool' },
    ]);
    const long = project(t, 0, { steps: ['x'.repeat(251)] });
    expect(long.problems.map((p) => p.code)).toEqual(['SUMMARY_TOO_LONG']);
  });

  it('refuses text longer than the lexicon allows, naming the turn, never truncating', () => {
    const { record, problems } = project(turn([{ type: 'text', text: 'y'.repeat(15_001) }]), 4, {});
    expect(problems).toMatchObject([{ code: 'TEXT_TOO_LONG', turn: 5 }]);
    expect(problems[0]!.message).toMatch(/Turn 5 is too long/);
    expect(record.text?.length).toBe(15_001);
  });

  it('a long Hindi turn publishes: the byte limit allows 10 bytes a grapheme, as Bluesky posts do', () => {
    const text = HINDI.repeat(240);
    // 9,600 graphemes, over 60,000 bytes: refused under the old byte limit, within both limits now.
    expect(graphemes(text)).toBe(9_600);
    expect(new TextEncoder().encode(text).length).toBeGreaterThan(60_000);
    const { record, problems } = project(turn([{ type: 'text', text }]), 0, {});
    expect(problems).toEqual([]);
    expect(record.text).toBe(text);
    assertValidRecord('click.aligned.chat.message', record);
  });

  it('a turn over a text limit is refused with a message naming the limit it hit', () => {
    const chars = project(turn([{ type: 'text', text: 'y'.repeat(15_001) }]), 0, {}).problems;
    expect(chars.map((p) => p.message)).toEqual([
      'Turn 1 is too long to publish (15,001 characters; the limit is 15,000 characters). Redact part of it or withhold it.',
    ]);
    // 7,000 family emoji: few characters, 25 bytes each.
    const family = '👨‍👩‍👧‍👦'.repeat(7_000);
    const bytes = project(turn([{ type: 'text', text: family }]), 2, {}).problems;
    expect(bytes.map((p) => p.message)).toEqual([
      'Turn 3 is too long to publish (175,000 bytes as UTF-8; the limit is 150,000 bytes, whatever the number of characters). Redact part of it or withhold it.',
    ]);
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
    const choice = { refs: ['at://did:plc:dan/app.bsky.feed.post/3kpost2'] };
    const wanted = referencesOf(t, choice, publishedTexts([t], { m1: choice }));
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
    const { record, problems } = project(
      t,
      0,
      { refs: ['at://did:plc:dan/app.bsky.feed.post/3kpost2'] },
      resolution,
    );
    expect(record.refs).toEqual([{ uri: 'at://did:plc:bob/app.bsky.feed.post/3kpost1', cid: 'bafyreia' }]);
    expect(record.mentions).toEqual(['did:plc:bob']);
    expect(record.role).toBe('user');
    expect(record.model).toBeUndefined();
    expect(problems.map((p) => p.code)).toEqual(['UNRESOLVED_REF', 'UNRESOLVED_MENTION']);
  });

  it('refuses a link or mention whose name resolves to a did:web that spells a covered word', () => {
    const text = 'Zephyr said so: https://bsky.app/profile/bob.test/post/3kpost1, ask @bob.test.';
    const t = turn([{ type: 'text', text }], { role: 'player' });
    const choice = { redactions: [{ start: 0, end: 6 }] };
    const published = publishedTexts([t], { m1: choice });
    const resolved = (did: string): Resolution => ({
      refs: new Map([
        [
          'at://bob.test/app.bsky.feed.post/3kpost1',
          { uri: `at://${did}/app.bsky.feed.post/3kpost1`, cid: 'bafyreia' },
        ],
      ]),
      mentions: new Map([['bob.test', did]]),
    });
    const ctx = (resolution: Resolution) => ({
      sessionUri,
      resolution,
      published,
      known: { agents: [], skills: [] },
    });
    const web = projectTurn(t, 0, choice, ctx(resolved('did:web:ZEPHYR.example')));
    expect(web.problems.map((p) => p.code)).toEqual(['COVERED_REFERENCE', 'COVERED_REFERENCE']);
    expect(JSON.stringify(web.record).toLowerCase()).not.toContain('zephyr');
    // Percent-escaped in the DID as a did:web may be (the cover reads escapes).
    const escaped = projectTurn(t, 0, choice, ctx(resolved('did:web:%7Aephyr.example%3A8080')));
    expect(escaped.problems.map((p) => p.code)).toEqual(['COVERED_REFERENCE', 'COVERED_REFERENCE']);
    // The control: a name that resolves elsewhere publishes its link and mention.
    const plc = projectTurn(t, 0, choice, ctx(resolved('did:plc:bob')));
    expect(plc.problems).toEqual([]);
    expect(plc.record.mentions).toEqual(['did:plc:bob']);
    expect(plc.record.refs).toHaveLength(1);
  });

  it('refuses a link whose record, or a name whose handle, shows a covered word: other AppViews show them', () => {
    const text = 'Zephyr said so: https://bsky.app/profile/bob.test/post/3kpost1, ask @bob.test.';
    const t = turn([{ type: 'text', text }], { role: 'player' });
    const choice = { redactions: [{ start: 0, end: 6 }] };
    const published = publishedTexts([t], { m1: choice });
    const resolved = (shown: string[] | null, handle: string | null): Resolution => ({
      refs: new Map([
        [
          'at://bob.test/app.bsky.feed.post/3kpost1',
          { uri: 'at://did:plc:bob/app.bsky.feed.post/3kpost1', cid: 'bafyreia', shown },
        ],
      ]),
      mentions: new Map([['bob.test', 'did:plc:bob']]),
      handles: new Map([['did:plc:bob', handle]]),
    });
    const at = (resolution: Resolution, p = published) =>
      projectTurn(t, 0, choice, { sessionUri, resolution, published: p, known: { agents: [], skills: [] } });
    // The linked post quotes the covered word (folded, as the cover reads it).
    const quoted = at(resolved(['I met ZEPHYR today', 'en'], 'bob.test'));
    expect(quoted.problems.map((p) => [p.code, p.message.includes('a record that shows')])).toEqual([
      ['COVERED_REFERENCE', true],
    ]);
    expect(quoted.record.refs).toBeUndefined();
    expect(quoted.record.mentions).toEqual(['did:plc:bob']);
    // Its author's document now claims a handle that spells it: the link and the mention both lead to it.
    const named = at(resolved(['Maps are the best'], 'zephyr.example'));
    expect(named.problems.map((p) => p.code)).toEqual(['COVERED_REFERENCE', 'COVERED_REFERENCE']);
    expect(JSON.stringify(named.record).toLowerCase()).not.toContain('did:plc:bob');
    // A record too large to read whole cannot be told clean …
    const large = at(resolved(null, 'bob.test'));
    expect(large.problems.map((p) => [p.code, p.message.includes('too large')])).toEqual([
      ['COVERED_REFERENCE', true],
    ]);
    // … unless nothing is covered; and a record and handle that show nothing covered are published.
    const uncovered = projectTurn(
      t,
      0,
      {},
      {
        sessionUri,
        resolution: resolved(null, 'bob.test'),
        published: publishedTexts([t], { m1: {} }),
        known: { agents: [], skills: [] },
      },
    );
    expect(uncovered.problems).toEqual([]);
    // A mention by DID whose document could not be read is not published: its handle was not checked.
    const unread = projectTurn(
      t,
      0,
      { ...choice, mentions: ['did:plc:carol'] },
      {
        sessionUri,
        resolution: {
          ...resolved(['Maps are the best'], 'bob.test'),
          mentions: new Map<string, string | null>([
            ['bob.test', 'did:plc:bob'],
            ['did:plc:carol', null],
          ]),
        },
        published,
        known: { agents: [], skills: [] },
      },
    );
    expect(unread.problems.map((p) => p.code)).toEqual(['UNRESOLVED_MENTION']);
    expect(unread.record.mentions).toEqual(['did:plc:bob']);
    const clean = at(resolved(['Maps are the best'], 'bob.test'));
    expect(clean.problems).toEqual([]);
    expect(clean.record.refs).toEqual([
      { uri: 'at://did:plc:bob/app.bsky.feed.post/3kpost1', cid: 'bafyreia' },
    ]);
  });

  it('does not publish a mention or link that sits under a redaction', () => {
    const text = 'Ask @secret.test about it.';
    const t = turn([{ type: 'text', text }], { role: 'player' });
    const choice = { redactions: [{ start: 4, end: 16 }] };
    const wanted = referencesOf(t, choice, publishedTexts([t], { m1: choice }));
    expect(wanted.accounts).toEqual([]);
  });

  it('describes the session: title, when it began, who was talked to — never their prompts', () => {
    const record = projectSession({
      title: 'Maps',
      createdAt: new Date('2026-11-01T09:00:00Z'),
      agents: [
        {
          name: 'Ada',
          jobTitle: 'Librarian',
          model: 'openai/gpt-x',
          choice: { description: 'Keeps   the maps.' },
        },
        { name: 'Bo', jobTitle: '', model: null, choice: { description: '  ' } },
      ],
      cover: noCover,
    });
    expect(record).toEqual({
      $type: 'click.aligned.chat.session',
      title: 'Maps',
      createdAt: '2026-11-01T09:00:00.000Z',
      agents: [
        { name: 'Ada', role: 'Librarian', description: 'Keeps the maps.', model: 'openai/gpt-x' },
        { name: 'Bo' },
      ],
    });
    assertValidRecord('click.aligned.chat.session', record);
  });

  it('an agent is its name and Job Title unless the Player describes it', () => {
    const record = projectSession({
      title: 'Maps',
      createdAt: new Date('2026-11-01T09:00:00Z'),
      agents: [{ name: 'Ada', jobTitle: 'Librarian', model: null }],
      cover: noCover,
    });
    expect(record.agents).toEqual([{ name: 'Ada', role: 'Librarian' }]);
  });

  it('step names: the server’s own Tools by name, others generic, unless the Player names them', () => {
    const t = turn([
      { type: 'tool', id: 'a', name: 'bash', input: {}, state: 'done' },
      {
        type: 'tool',
        id: 'b',
        name: 'acme-payroll__lookup',
        description: 'Looks up an employee in the ACME payroll',
        input: {},
        state: 'done',
      },
      { type: 'tool', id: 'c', name: 'made_up', input: {}, state: 'done' },
      { type: 'tool', id: 'd', name: 'acme-payroll__lookup', input: {}, state: 'done' },
    ]);
    const plain = project(t, 0, {}).record;
    expect(plain.steps!.map((s) => s.name)).toEqual(['bash', 'mcp-tool', 'tool', 'mcp-tool']);
    // Nor does the default summary give the server away (its tool's description is the Player's to publish).
    expect(JSON.stringify(plain)).not.toMatch(/acme|payroll/i);
    const named = project(t, 0, { stepNames: [null, ' acme-payroll__lookup ', '', 'looked someone up'] });
    expect(named.record.steps!.map((s) => s.name)).toEqual([
      'bash',
      'acme-payroll__lookup',
      'tool',
      'looked someone up',
    ]);
  });
});

describe('a covered word is covered everywhere', () => {
  const convo = (texts: [string, Part[]][]): PublishTurn[] =>
    texts.map(([id, parts], i) => ({
      ...turn(parts),
      messageId: id,
      role: i % 2 ? 'npc' : 'player',
      createdAt: new Date(Date.UTC(2026, 10, 1, 10, i)),
    }));
  const first = 'My codename is PELICAN-7731, keep it between us.';
  const turns = convo([
    ['a', [{ type: 'text', text: first }]],
    [
      'b',
      [
        {
          type: 'tool',
          id: 't1',
          name: 'remember',
          input: { text: 'codename PELICAN-7731' },
          state: 'done',
          output: 'ok',
        },
        {
          type: 'tool',
          id: 't2',
          name: 'notes__save',
          description: 'Saves notes about pelican-7731 projects',
          input: { x: 1 },
          state: 'failed',
        },
        { type: 'text', text: 'Noted, Pelican‑7731 is safe with me. ＰＥＬＩＣＡＮ-7731!' },
      ],
    ],
    ['c', [{ type: 'text', text: 'And the rest.' }]],
  ]);
  const at = first.indexOf('PELICAN');
  const choices = {
    a: { redactions: [{ start: at, end: at + 'PELICAN-7731'.length }] },
    b: { steps: [null, 'Wrote down pelican-7731'] },
  };

  it('in every turn, step summary, title and agent — across case, Unicode forms and dashes', () => {
    const published = publishedTexts(turns, choices);
    const records = turns.map(
      (t, i) =>
        projectTurn(t, i, choices[t.messageId as 'a'] ?? {}, {
          sessionUri,
          resolution: empty,
          published,
          known: { agents: ['Ada'], skills: [] },
        }).record,
    );
    const session = projectSession({
      title: 'The pelican-7731 file',
      createdAt: new Date(),
      agents: [
        {
          name: 'Ada',
          jobTitle: 'Keeper of PELICAN-7731',
          model: null,
          choice: { description: 'Knows pelican-7731.' },
        },
      ],
      cover: published.cover,
    });
    const all = JSON.stringify([records, session]);
    // A non-breaking hyphen (U+2011) and full-width letters read as the same word: covered too.
    expect(all.toLowerCase()).not.toMatch(/pelican|ｐｅｌｉｃａｎ/);
    expect(records[0]!.text).toBe(`My codename is ${REDACTION_BAR}, keep it between us.`);
    expect(records[1]!.text).toBe(`Noted, ${REDACTION_BAR} is safe with me. ${REDACTION_BAR}!`);
    expect(records[1]!.steps).toEqual([
      { name: 'remember', summary: 'saved a memory' },
      { name: 'mcp-tool', summary: `Wrote down ${REDACTION_BAR}`, failed: true },
    ]);
    expect(session.title).toBe(`The ${REDACTION_BAR} file`);
    expect(session.agents![0]).toEqual({
      name: 'Ada',
      role: `Keeper of ${REDACTION_BAR}`,
      description: `Knows ${REDACTION_BAR}.`,
    });
    for (const r of records) assertValidRecord('click.aligned.chat.message', r);
    assertValidRecord('click.aligned.chat.session', session);
  });

  it('the default title is made from published text only, cut at a word boundary', () => {
    expect(defaultTitle(turns, publishedTexts(turns, choices))).toBe(
      `My codename is ${REDACTION_BAR}, keep it between us.`,
    );
    // The first turn withheld: its words never reach the title.
    const withheld = { ...choices, a: { withheld: true } };
    expect(defaultTitle(turns, publishedTexts(turns, withheld))).toBe(
      'Noted, Pelican‑7731 is safe with me. ＰＥＬＩＣＡＮ-7731!',
    );
    const long = convo([['x', [{ type: 'text', text: `${'word '.repeat(30)}end` }]]]);
    const title = defaultTitle(long, publishedTexts(long, {}));
    expect(title).toBe(`${'word '.repeat(16).trim()}…`);
    expect(defaultTitle(long, publishedTexts(long, { x: { withheld: true } }))).toBe('Untitled conversation');
    // A title is plain text: the first Message's Markdown marks do not reach it.
    const marked = convo([
      ['m', [{ type: 'text', text: 'Draw me a *map* of the **old library**, please.' }]],
    ]);
    expect(defaultTitle(marked, publishedTexts(marked, {}))).toBe(
      'Draw me a map of the old library, please.',
    );
  });

  it('default step summaries never carry arguments or output', () => {
    const calls = convo([
      [
        'z',
        [
          { type: 'tool', id: '1', name: 'bash', input: { command: 'cat secret.txt' }, state: 'done' },
          { type: 'tool', id: '2', name: 'load_skill', input: { name: 'maps' }, state: 'done' },
          { type: 'tool', id: '3', name: 'load_skill', input: { name: 'secret-plans' }, state: 'done' },
          {
            type: 'tool',
            id: '4',
            name: 'message_npc',
            input: { npc: 'ada', message: 'psst' },
            state: 'done',
          },
          { type: 'tool', id: '5', name: 'message_npc', input: { npc: 'Mallory' }, state: 'done' },
          { type: 'tool', id: '6', name: 'srv__search', input: { q: 'secret' }, state: 'done' },
          { type: 'tool', id: '7', name: 'writeFile', input: { path: 'secret' }, state: 'done' },
        ],
      ],
    ]);
    const { record } = projectTurn(
      calls[0]!,
      0,
      {},
      {
        sessionUri,
        resolution: empty,
        published: publishedTexts(calls, {}),
        known: { agents: ['Ada', 'Bob'], skills: ['maps'] },
      },
    );
    expect(record.steps!.map((s) => s.summary)).toEqual([
      'ran a command in the sandbox',
      'loaded the skill maps',
      'loaded a skill',
      'asked Ada',
      'asked another NPC',
      'called a tool of an MCP Server',
      'wrote a file in the sandbox',
    ]);
    expect(JSON.stringify(record)).not.toMatch(/secret|psst|Mallory/);
  });

  it('an added ref or mention that shows a covered word is refused and never looked up', () => {
    const t = convo([['m', [{ type: 'text', text: 'ask bob.test about it' }]]]);
    const choice = {
      redactions: [{ start: 4, end: 12 }],
      mentions: ['@Bob.test'],
      refs: ['at://bob.test/app.bsky.feed.post/3k'],
    };
    const published = publishedTexts(t, { m: choice });
    const wanted = referencesOf(t[0]!, choice, published);
    expect(wanted.accounts).toEqual([]);
    expect(wanted.pointers).toEqual([]);
    const { problems } = projectTurn(t[0]!, 0, choice, {
      sessionUri,
      resolution: empty,
      published,
      known: { agents: [], skills: [] },
    });
    expect(problems.map((p) => p.code)).toEqual(['COVERED_REFERENCE', 'COVERED_REFERENCE']);
  });

  it('a post link whose escapes are not UTF-8 names nobody: the turn still publishes', () => {
    const text = 'broken https://bsky.app/profile/%ZZ%E0/post/3kabc and https://bsky.app/profile/%C3/post/3k';
    const t = convo([['m', [{ type: 'text', text }]]]);
    const published = publishedTexts(t, {});
    const wanted = referencesOf(t[0]!, {}, published);
    expect(wanted.pointers).toEqual([]);
    const { record } = projectTurn(
      t[0]!,
      0,
      {},
      {
        sessionUri,
        resolution: empty,
        published,
        known: { agents: [], skills: [] },
      },
    );
    expect((record as { text: string }).text).toBe(text);
  });

  it('a link or mention that spells a covered word in percent-encoding is refused too, never looked up', () => {
    const text = 'I am Zephyr. See https://bsky.app/profile/%7Aephyr.bsky.social/post/3kabc';
    const t = convo([['m', [{ type: 'text', text }]]]);
    const choice = {
      redactions: [{ start: 5, end: 11 }],
      refs: ['at://did:web:%7Aephyr.example/app.bsky.feed.post/3k'],
      mentions: ['did:web:%5Aephyr.example', '@%7Aephyr.test', 'not a handle'],
    };
    const published = publishedTexts(t, { m: choice });
    const wanted = referencesOf(t[0]!, choice, published);
    expect(wanted.pointers).toEqual([]);
    expect(wanted.accounts).toEqual([]);
    // The link in the text spells the word in percent-escapes: it is covered where it stands, so it is no
    // longer a link to follow.
    expect([...published.texts.values()].join(' ')).toMatch(/profile\/█+\.bsky\.social/);
    // The added ones, as the Player reads them in the problem list.
    expect(wanted.covered).toEqual([
      'at://did:web:%7Aephyr.example/app.bsky.feed.post/3k',
      '@did:web:%5aephyr.example',
      '@%7aephyr.test',
    ]);
    // Whatever is not a handle or a DID is refused without a lookup.
    expect(wanted.bad).toEqual(['@not a handle']);
  });
});
