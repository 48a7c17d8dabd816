import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { coverAtOnce } from '../../src/publish/coverAtOnce.ts';
import { choose, type Loaded, type PublishInput, plan, sameRecord } from '../../src/publish/plan.ts';
import type { PublishTurn, Resolution } from '../../src/publish/projection.ts';
import type { PublishedRecord } from '../../src/publish/store.ts';
import { type Choices, coverOf, REDACTION_BAR, type Span } from '../../src/redaction/index.ts';

// Covering at once (ADR 0090), pure: over generated Conversations, redactions already published and redactions
// added, what it writes is exactly what a whole publish with both would change, and nothing it leaves shows a
// covered word.

const ADA = '11111111-1111-4111-8111-111111111111';
const NOTHING: Resolution = { refs: new Map(), mentions: new Map() };
/** A record's CID as the PDS gives it (a strongRef's must parse). */
const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
const WORDS = ['Zephyr', 'Quay', 'east', 'wing', 'maps', 'nine', 'the', 'Halvard', 'ZEPHYR', 'Zephyr’s'];

const turn = (i: number, text: string): PublishTurn => ({
  messageId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
  role: i % 2 ? 'npc' : 'player',
  npcId: i % 2 ? ADA : null,
  parts: [{ type: 'text', text }],
  createdAt: new Date(Date.UTC(2026, 10, 1, 10, i)),
  provider: i % 2 ? 'openai' : null,
  model: i % 2 ? 'gpt-x' : null,
});

const loadedOf = (turns: PublishTurn[]): Loaded => ({
  did: 'did:plc:alice',
  turns,
  participants: [{ id: ADA, name: 'Ada', jobTitle: 'Keeper', description: '' }],
  existing: [],
  sessionRkey: undefined,
  draft: undefined,
  skills: [],
  everyId: turns.map((t) => t.messageId),
  avatars: new Map(),
});

const planOf = (l: Loaded, input: PublishInput) => plan(l, input, choose(l.turns, input, l.draft), NOTHING);
const written = (records: PublishedRecord[]) =>
  records.map((r) => ({ ...r, cid: `cid-${r.rkey}`, pending: null }));

/** Word ranges (first word, count) as character spans of the words joined by spaces. */
function spansOf(words: string[], ranges: [number, number][]): Span[] {
  const starts: number[] = [];
  let at = 0;
  for (const w of words) {
    starts.push(at);
    at += w.length + 1;
  }
  return ranges.map(([first, count]) => {
    const a = first % words.length;
    const b = Math.min(words.length - 1, a + (count % 3));
    return { start: starts[a]!, end: starts[b]! + words[b]!.length };
  });
}

const conversation = fc
  .array(fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 25 }), { minLength: 2, maxLength: 5 })
  .chain((turns) => {
    const ranges = fc.array(fc.tuple(fc.nat(40), fc.nat(5)), { maxLength: 3 });
    return fc.record({
      turns: fc.constant(turns),
      before: fc.array(ranges, { minLength: turns.length, maxLength: turns.length }),
      added: fc.array(ranges, { minLength: turns.length, maxLength: turns.length }),
    });
  });

/** Every string of a record a reader reads (not its ids, dates or type). */
function readable(record: Record<string, unknown>): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  for (const [k, v] of Object.entries(record))
    if (!['$type', 'session', 'role', 'createdAt', 'refs', 'mentions'].includes(k)) walk(v);
  return out;
}

describe('covering at once', () => {
  it('writes exactly what a whole publish with the added redactions would change, and leaves no covered word', () => {
    fc.assert(
      fc.property(conversation, ({ turns: wordLists, before, added }) => {
        const turns = wordLists.map((w, i) => turn(i, w.join(' ')));
        const choicesOf = (ranges: [number, number][][]): Choices =>
          Object.fromEntries(
            turns.flatMap((t, i) =>
              ranges[i]!.length ? [[t.messageId, { redactions: spansOf(wordLists[i]!, ranges[i]!) }]] : [],
            ),
          );
        const old = choicesOf(before);
        const first = planOf(loadedOf(turns), { choices: old });
        const loaded = { ...loadedOf(turns), existing: written(first.records), draft: first.draft };
        const request = choicesOf(added);
        const out = coverAtOnce(loaded, request);

        const key = (s: Span) => `${s.start}:${s.end}`;
        const isNew = turns.some((t) => {
          const had = new Set((old[t.messageId]?.redactions ?? []).map(key));
          return (request[t.messageId]?.redactions ?? []).some((s) => !had.has(key(s)));
        });
        expect(out === null).toBe(!isNew);
        if (!out) return;

        // The draft keeps every redaction it had and every one added.
        const merged = { ...first.draft.choices };
        for (const [id, all] of Object.entries(out.redactions))
          merged[id] = { ...merged[id], redactions: all };
        for (const t of turns) {
          const kept = new Set((merged[t.messageId]?.redactions ?? []).map(key));
          for (const s of [
            ...(old[t.messageId]?.redactions ?? []),
            ...(request[t.messageId]?.redactions ?? []),
          ])
            expect(kept.has(key(s))).toBe(true);
        }
        // The oracle: a whole publish of both sets of redactions, over what is out.
        const whole = planOf(loaded, { choices: merged });
        const rewritten = new Map(out.records.map((r) => [r.rkey, r]));
        for (const stored of loaded.existing) {
          const expected = whole.records.find((r) => r.rkey === stored.rkey)!;
          const got = rewritten.get(stored.rkey);
          expect(got?.record ?? stored.record).toEqual(expected.record);
          // Only what changes is written.
          if (got) expect(sameRecord(got.record, stored.record)).toBe(false);
        }
        expect(out.holes).toEqual([]);

        // And directly: no string a reader reads shows a covered word.
        const cover = coverOf(
          turns.map((t) => ({ id: t.messageId, text: (t.parts[0] as { text: string }).text })),
          merged,
        );
        for (const stored of loaded.existing)
          for (const s of readable(rewritten.get(stored.rkey)?.record ?? stored.record))
            expect(cover.find(s), s).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it('covers a word that an earlier bar had cut off from its selection, as a whole publish would', () => {
    // "east" was covered; now "east wing" is. Covering the published text again would leave "wing" beside the
    // bar: the turn is planned again from its own text instead.
    const text = 'The maps are in the east wing.';
    const turns = [turn(0, 'Where are the maps?'), turn(1, text)];
    const at = (w: string) => ({ start: text.indexOf(w), end: text.indexOf(w) + w.length });
    const first = planOf(loadedOf(turns), {
      choices: { [turns[1]!.messageId]: { redactions: [at('east')] } },
    });
    // Ada was renamed since: the session would change too, but not by the cover, and nothing else goes out.
    const renamed = loadedOf(turns);
    renamed.participants = [{ ...renamed.participants[0]!, name: 'Ada Lovelace' }];
    const loaded = { ...renamed, existing: written(first.records), draft: first.draft };
    const out = coverAtOnce(loaded, { [turns[1]!.messageId]: { redactions: [at('east wing')] } })!;
    expect(out.records.map((r) => r.record.text)).toEqual([`The maps are in the ${REDACTION_BAR}.`]);
  });

  it('covers the words of a reply regenerated since the page was opened: its record, still out, becomes a hole', () => {
    const old = 'Zephyr is in the east wing.';
    const [question, reply, again] = [turn(0, 'Where is Zephyr?'), turn(1, old), turn(3, 'He is out.')];
    const first = planOf(loadedOf([question!, reply!]), { choices: {} });
    // The reply was regenerated: the path is the question and the new reply, not yet published.
    const loaded = { ...loadedOf([question!, again!]), existing: written(first.records), draft: first.draft };
    const out = coverAtOnce(loaded, { [reply!.messageId]: { redactions: [{ start: 0, end: 6 }] } }, [
      { id: reply!.messageId, text: old },
    ])!;
    expect(out.words[reply!.messageId]).toEqual(['Zephyr']);
    const byMessage = new Map(out.records.map((r) => [r.messageId, r.record]));
    expect(byMessage.get(question!.messageId)?.text).toBe(`Where is ${REDACTION_BAR}?`);
    expect(byMessage.get(reply!.messageId)).toEqual({
      $type: 'click.aligned.chat.message',
      session: expect.any(String),
      role: 'assistant',
      createdAt: expect.any(String),
      withheld: true,
    });
    expect(byMessage.get(null)?.title).toBe(`Where is ${REDACTION_BAR}?`);
    // Not on the path: said as no turn of it.
    expect(out.holes).toEqual([]);
  });

  it('drops a link or mention already out whose did:web spells a word covered now, in a turn the cover does not touch', () => {
    const turns = [turn(0, 'Ask @bob.test.'), turn(1, 'Zephyr is here.')];
    const resolution: Resolution = {
      refs: new Map(),
      mentions: new Map([['bob.test', 'did:web:zephyr.example']]),
    };
    const l = loadedOf(turns);
    const input = { choices: {} };
    const first = plan(l, input, choose(turns, input, undefined), resolution);
    expect(first.records[1]!.record.mentions).toEqual(['did:web:zephyr.example']);
    const loaded = { ...l, existing: written(first.records), draft: first.draft };
    const out = coverAtOnce(loaded, { [turns[1]!.messageId]: { redactions: [{ start: 0, end: 6 }] } })!;
    const byMessage = new Map(out.records.map((r) => [r.messageId, r.record]));
    expect(byMessage.get(turns[0]!.messageId)).toEqual({ ...first.records[1]!.record, mentions: undefined });
    expect(JSON.stringify(out.records).toLowerCase()).not.toContain('zephyr');
  });

  it('a record the Conversation has drifted from (an NPC renamed since) is covered as it stands: nothing of the drift goes out', () => {
    // The title is clipped at "… Halvard…": the words covered now are "Halvard Quay".
    const long = 'We walked a long while along the old sea wall and the harbour, then met Halvard Quay.';
    const turns = [turn(0, long), turn(1, 'Zephyr says hello.')];
    const first = planOf(
      {
        ...loadedOf(turns),
        participants: [{ id: ADA, name: 'Zephyr', jobTitle: 'Guide', description: '' }],
      },
      { choices: {} },
    );
    const title = first.records[0]!.record.title as string;
    expect(title.endsWith('Halvard…')).toBe(true);
    const renamed = {
      ...loadedOf(turns),
      participants: [{ id: ADA, name: 'Keeper', jobTitle: 'Guide', description: '' }],
    };
    const loaded = { ...renamed, existing: written(first.records), draft: first.draft };
    const at = long.indexOf('Halvard Quay');
    const out = coverAtOnce(loaded, {
      [turns[0]!.messageId]: { redactions: [{ start: at, end: at + 'Halvard Quay'.length }] },
      [turns[1]!.messageId]: { redactions: [{ start: 0, end: 6 }] },
    })!;
    const session = out.records.find((r) => r.collection === 'click.aligned.chat.session')!.record as {
      title: string;
      agents: { name: string }[];
    };
    // The stored session, covered: the renamed NPC is not published, its old name is covered, and the title
    // does not end in the start of the covered words.
    expect(session.agents.map((a) => a.name)).toEqual([REDACTION_BAR]);
    expect(session.title).toBe(`${title.slice(0, -'Halvard…'.length)}${REDACTION_BAR}…`);
    expect(JSON.stringify(out.records)).not.toMatch(/Keeper|Halvard|Zephyr/);
  });

  it('a turn shown on another branch since: its title is not published, the stored one is covered, the named turn becomes a hole', () => {
    const [meet, sure, hello] = [
      turn(0, 'Meet Alice at the quay.'),
      turn(1, 'Sure.'),
      turn(2, 'Hello there.'),
    ];
    const first = planOf(loadedOf([meet!, sure!]), { choices: {} });
    // The first turn was edited onto a new branch: the path is the new turn alone.
    const loaded = { ...loadedOf([hello!]), existing: written(first.records), draft: first.draft };
    const out = coverAtOnce(loaded, { [meet!.messageId]: { redactions: [{ start: 5, end: 10 }] } }, [
      { id: meet!.messageId, text: 'Meet Alice at the quay.' },
    ])!;
    const byMessage = new Map(out.records.map((r) => [r.messageId, r.record]));
    expect(byMessage.get(null)?.title).toBe(`Meet ${REDACTION_BAR} at the quay.`);
    expect(byMessage.get(meet!.messageId)?.withheld).toBe(true);
    expect(byMessage.has(sure!.messageId)).toBe(false);
    expect(out.holes).toEqual([]);
  });

  it('a turn whose added mention now shows a covered word becomes a hole, though its text does not change', () => {
    const turns = [turn(0, 'Ask alice about it.'), turn(1, 'I will.')];
    const choices = { [turns[1]!.messageId]: { mentions: ['alice.example.com'] } };
    const resolution: Resolution = {
      refs: new Map(),
      mentions: new Map([['alice.example.com', 'did:plc:alice']]),
    };
    const l = loadedOf(turns);
    const first = plan(l, { choices }, choose(turns, { choices }, undefined), resolution);
    expect(first.records[2]!.record.mentions).toEqual(['did:plc:alice']);
    const loaded = { ...l, existing: written(first.records), draft: first.draft };
    const out = coverAtOnce(loaded, { [turns[0]!.messageId]: { redactions: [{ start: 4, end: 9 }] } })!;
    const byMessage = new Map(out.records.map((r) => [r.messageId, r.record]));
    expect(byMessage.get(turns[1]!.messageId)?.withheld).toBe(true);
    expect(out.holes).toEqual([2]);
    expect(out.withheld).toEqual([turns[1]!.messageId]);
  });

  it('drops the links and mentions of a turn when words are covered at once: what they lead to may show them (ADR 0108)', () => {
    const turns = [
      turn(0, 'Ask @bob.test, see at://did:plc:xyz/app.bsky.feed.generator/zephyr-feed'),
      turn(1, 'Ok.'),
    ];
    const resolution: Resolution = {
      refs: new Map([
        [
          'at://did:plc:xyz/app.bsky.feed.generator/zephyr-feed',
          { uri: 'at://did:plc:xyz/app.bsky.feed.generator/zephyr-feed', cid: CID },
        ],
      ]),
      mentions: new Map([['bob.test', 'did:plc:bob']]),
    };
    const l = loadedOf(turns);
    const input = { choices: {} };
    const first = plan(l, input, choose(turns, input, undefined), resolution);
    expect(first.records[1]!.record).toMatchObject({
      refs: [{ cid: CID }],
      mentions: ['did:plc:bob'],
    });
    // "bob" covered in the reply: the mention's handle in turn 1 is covered, so its DID goes; and the link, which
    // is not looked up again here, goes with it.
    const loaded2 = {
      ...l,
      turns: [turns[0]!, turn(1, 'Ok, bob.')],
      existing: written(first.records),
      draft: first.draft,
    };
    const out = coverAtOnce(loaded2, { [turns[1]!.messageId]: { redactions: [{ start: 4, end: 7 }] } })!;
    const first1 = out.records.find((r) => r.messageId === turns[0]!.messageId)!.record;
    expect(first1.mentions).toBeUndefined();
    expect(first1.refs).toBeUndefined();
    // "zephyr" covered: the ref whose record key spells it goes too.
    const loaded3 = {
      ...l,
      turns: [turns[0]!, turn(1, 'Ok, zephyr.')],
      existing: written(first.records),
      draft: first.draft,
    };
    const out3 = coverAtOnce(loaded3, { [turns[1]!.messageId]: { redactions: [{ start: 4, end: 10 }] } })!;
    const first3 = out3.records.find((r) => r.messageId === turns[0]!.messageId)!.record;
    expect(first3.refs).toBeUndefined();
    expect(JSON.stringify(out3.records).toLowerCase()).not.toContain('zephyr');
  });

  it('a link whose did:plc merely holds a covered word: dropped at once (nothing is looked up), kept by a whole publish', () => {
    const turns = [turn(0, 'see https://bsky.app/profile/bob.test/post/3kabc'), turn(1, 'Ok, qq.')];
    const resolution: Resolution = {
      refs: new Map([
        [
          'at://bob.test/app.bsky.feed.post/3kabc',
          { uri: 'at://did:plc:abqqcd/app.bsky.feed.post/3kabc', cid: CID },
        ],
      ]),
      mentions: new Map(),
    };
    const l = loadedOf(turns);
    const first = plan(l, { choices: {} }, choose(turns, { choices: {} }, undefined), resolution);
    const loaded = { ...l, existing: written(first.records), draft: first.draft };
    const covering = { [turns[1]!.messageId]: { redactions: [{ start: 4, end: 6 }] } };
    const out = coverAtOnce(loaded, covering)!;
    const byMessage = new Map(out.records.map((r) => [r.messageId, r.record]));
    expect(byMessage.get(turns[1]!.messageId)?.text).toBe(`Ok, ${REDACTION_BAR}.`);
    expect(byMessage.get(turns[0]!.messageId)).toMatchObject({
      text: 'see https://bsky.app/profile/bob.test/post/3kabc',
    });
    expect(byMessage.get(turns[0]!.messageId)!.refs).toBeUndefined();
    // A whole publish looks it up, and keeps it: the letters of a did:plc are not its words.
    const again = plan(
      loaded,
      { choices: covering },
      choose(turns, { choices: covering }, first.draft),
      resolution,
    );
    expect(again.problems).toEqual([]);
    expect(again.records[1]!.record.refs).toEqual([
      { uri: 'at://did:plc:abqqcd/app.bsky.feed.post/3kabc', cid: CID },
    ]);
  });

  it('a word covered again in another case or turn covers nothing new: the links stay', () => {
    const turns = [turn(0, 'see https://bsky.app/profile/bob.test/post/3kabc'), turn(1, 'Zephyr, ZEPHYR.')];
    const resolution: Resolution = {
      refs: new Map([
        [
          'at://bob.test/app.bsky.feed.post/3kabc',
          { uri: 'at://did:plc:bob/app.bsky.feed.post/3kabc', cid: CID },
        ],
      ]),
      mentions: new Map(),
    };
    const l = loadedOf(turns);
    const once = { [turns[1]!.messageId]: { redactions: [{ start: 0, end: 6 }] } };
    const first = plan(l, { choices: once }, choose(turns, { choices: once }, undefined), resolution);
    expect(first.records[1]!.record.refs).toHaveLength(1);
    const loaded = { ...l, existing: written(first.records), draft: first.draft };
    const again = coverAtOnce(loaded, { [turns[1]!.messageId]: { redactions: [{ start: 8, end: 14 }] } });
    // Nothing to rewrite: the record already shows bars there, and the link is kept.
    expect(again?.records.find((r) => r.messageId === turns[0]!.messageId)).toBeUndefined();
    // A new word drops it (the control).
    const more = coverAtOnce(loaded, { [turns[1]!.messageId]: { redactions: [{ start: 0, end: 15 }] } });
    expect(more?.records.find((r) => r.messageId === turns[0]!.messageId)?.record.refs).toBeUndefined();
    expect(more?.records.some((r) => r.messageId === turns[0]!.messageId)).toBe(true);
  });

  it('drops rows never written of turns no longer on the path, and says when a turn holds too many redactions', () => {
    const [a, b, c] = [turn(0, 'Zephyr is here.'), turn(1, 'Hello Zephyr.'), turn(2, 'Bye.')];
    const first = planOf(loadedOf([a!, b!]), { choices: {} });
    // b's record was planned but never written (a publish paused), then b was regenerated as c.
    const existing = written(first.records).map((r) =>
      r.messageId === b!.messageId ? { ...r, cid: null, pending: 'create' as const } : r,
    );
    const loaded = { ...loadedOf([a!, c!]), existing, draft: first.draft };
    const out = coverAtOnce(loaded, { [a!.messageId]: { redactions: [{ start: 0, end: 6 }] } })!;
    expect(out.stale).toEqual([existing.find((r) => r.messageId === b!.messageId)!.rkey]);
    expect(out.records.some((r) => r.messageId === b!.messageId)).toBe(false);

    // A turn that holds 500 redactions already takes no more, and says so.
    const text = 'Zephyr is here, and here, and here again.';
    const spans: { start: number; end: number }[] = [];
    for (let start = 0; start < text.length && spans.length < 500; start++)
      for (let end = start + 1; end <= text.length && spans.length < 500; end++) spans.push({ start, end });
    const d = turn(0, text);
    const full = { ...loadedOf([d]), existing: written(planOf(loadedOf([d]), { choices: {} }).records) };
    const crowded = { ...full, draft: { ...first.draft, choices: { [d.messageId]: { redactions: spans } } } };
    const more = coverAtOnce(crowded, { [d.messageId]: { redactions: [{ start: 40, end: 41 }] } })!;
    expect(more.tooMany).toBe(1);
    expect(more.redactions).toEqual({});
    expect(more.records).toEqual([]);
  });
});
