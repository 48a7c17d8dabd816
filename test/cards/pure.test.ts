import fc from 'fast-check';
import { expect, it } from 'vitest';
import { CardError, readCard, toCardV2, toCardV3 } from '../../src/cards/card.ts';
import { pngTextChunks, pngWithText } from '../../src/cards/png.ts';
import { plainName, wellFormed } from '../../src/parts/index.ts';
import { NPC_LIMITS } from '../../src/village/index.ts';

// Character cards from anywhere: whatever the bytes, reading one either gives an NPC within its limits or a
// CardError with words for the Player — never another exception (issue 18).
const value = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.constant(null),
  fc.boolean(),
  fc.array(fc.string(), { maxLength: 3 }),
);
const data = fc.record(
  {
    name: fc.oneof(fc.string({ maxLength: 120 }), value),
    description: fc.oneof(fc.string({ maxLength: 3000 }), value),
    personality: value,
    scenario: value,
    first_mes: value,
    mes_example: fc.oneof(fc.constant('<START>\n{{user}}: hi\n{{char}}: hello'), value),
    system_prompt: value,
    character_book: fc.oneof(
      value,
      fc.record({
        entries: fc.array(
          fc.oneof(
            value,
            fc.record(
              {
                keys: fc.oneof(fc.array(value), value),
                content: fc.oneof(fc.string({ maxLength: 2500 }), value),
                enabled: value,
              },
              { requiredKeys: [] },
            ),
          ),
          { maxLength: 6 },
        ),
      }),
    ),
    extensions: fc.oneof(
      value,
      fc.record({
        agentsville: fc.oneof(
          value,
          fc.record({ jobTitle: value, provider: value, model: value, thinking: value }),
        ),
      }),
    ),
  },
  { requiredKeys: [] },
);
const card = fc.oneof(
  data,
  data.map((d) => ({ spec: 'chara_card_v2', spec_version: '2.0', data: d })),
  data.map((d) => ({ spec: 'chara_card_v3', spec_version: '3.0', data: d })),
  fc.jsonValue(),
);

const readsOrRefuses = async (bytes: Uint8Array) => {
  try {
    const r = await readCard(bytes);
    expect(r.npc.name.length).toBeGreaterThan(0);
    expect(r.npc.name.length).toBeLessThanOrEqual(100);
    expect(r.npc.prompt.length).toBeLessThanOrEqual(NPC_LIMITS.prompt);
    expect(r.npc.description.length).toBeLessThanOrEqual(NPC_LIMITS.description);
    expect(r.npc.alternateGreetings.length).toBeLessThanOrEqual(NPC_LIMITS.alternateGreetings);
    for (const e of r.lorebook?.entries ?? []) {
      expect(e.content.length).toBeLessThanOrEqual(20_000);
      expect(Array.isArray(e.keys)).toBe(true);
    }
  } catch (e) {
    if (!(e instanceof CardError)) throw e;
    expect(e.message.length).toBeGreaterThan(10);
  }
};

it('any generated card, as JSON or inside a PNG, reads within the NPC limits or is refused in words', async () => {
  await fc.assert(
    fc.asyncProperty(card, fc.boolean(), async (c, inPng) => {
      const json = JSON.stringify(c);
      await readsOrRefuses(
        inPng ? pngWithText({ chara: Buffer.from(json).toString('base64') }) : new TextEncoder().encode(json),
      );
    }),
    { numRuns: 1500 },
  );
});

it('damaged PNGs — bytes flipped, cut short, lengths that lie — are refused, never thrown past', async () => {
  const good = pngWithText({ chara: Buffer.from(JSON.stringify({ name: 'Ada' })).toString('base64') });
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.nat({ max: good.length - 1 }), fc.integer({ min: 0, max: 255 })), {
        maxLength: 8,
      }),
      fc.nat({ max: good.length }),
      async (flips, cut) => {
        const bytes = good.slice(0, Math.max(8, cut));
        for (const [i, b] of flips) if (i >= 8 && i < bytes.length) bytes[i] = b;
        await readsOrRefuses(bytes);
      },
    ),
    { numRuns: 2000 },
  );
  await expect(
    readCard(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0xff, 0xff])),
  ).rejects.toThrow(CardError);
});

const v2 = (data: Record<string, unknown>) => ({ spec: 'chara_card_v2', spec_version: '2.0', data });
const bytesOf = (card: unknown) => new TextEncoder().encode(JSON.stringify(card));

// Shaped like SillyTavern's bundled Seraphina (a V2 PNG: long description with dialogue inside, greeting,
// creator notes, version, extensions.world, a 4-entry lorebook with keys and constant: false), written here.
const guardian = v2({
  name: 'Maren',
  description: `[{{char}}'s Personality= "watchful", "kind"]\n${'{{char}} keeps the marsh lanterns lit. '.repeat(80)}\n{{user}}: "Who are you?"\n{{char}}: "The lantern-keeper."`,
  personality: '',
  scenario: '',
  first_mes: '*The lantern sways as {{char}} leans over you.* "Awake at last, {{user}}?"',
  mes_example: '',
  creator_notes: 'Made for the marsh contest.',
  system_prompt: '',
  post_history_instructions: '',
  tags: [],
  creator: 'a marsh author',
  character_version: '1.0.0',
  alternate_greetings: [],
  extensions: { talkativeness: '0.5', fav: false, world: 'Fenmoor' },
  character_book: {
    name: 'Fenmoor',
    entries: [
      {
        id: 0,
        keys: ['fenmoor', 'marsh'],
        secondary_keys: [],
        comment: '',
        content: '{{char}}: "Fenmoor is the marsh."',
        constant: false,
        selective: false,
        insertion_order: 100,
        enabled: true,
        position: 'before_char',
        extensions: { position: 0, probability: null, useProbability: false },
      },
      {
        id: 1,
        keys: ['lantern'],
        secondary_keys: [],
        comment: '',
        content: 'The lanterns keep the drowned away.',
        constant: false,
        selective: false,
        insertion_order: 100,
        enabled: true,
        position: 'before_char',
        extensions: { position: 0, probability: null, useProbability: false },
      },
    ],
  },
});

it('a V2 card keeps every field as its maker wrote it: macros unexpanded, the lorebook as it came', async () => {
  const r = await readCard(bytesOf(guardian));
  const d = guardian.data as Record<string, unknown>;
  expect(r.spec).toBe('v2');
  expect(r.npc).toMatchObject({
    name: 'Maren',
    description: d.description,
    greeting: d.first_mes,
    creator: 'a marsh author',
    creatorNotes: 'Made for the marsh contest.',
    characterVersion: '1.0.0',
    extensions: { talkativeness: '0.5', fav: false, world: 'Fenmoor' },
    prompt: '',
  });
  expect((r.npc.description as string).length).toBeGreaterThan(2000);
  expect(r.lorebook).toEqual(d.character_book);
});

it('what a foreign card exports back differs only by our own extensions and V1 fields at the top', async () => {
  const r = await readCard(bytesOf(guardian));
  const out = toCardV2(r.npc, r.lorebook);
  const { agentsville, ...theirs } = out.data.extensions as Record<string, unknown>;
  expect(agentsville).toBeDefined();
  expect({ ...out.data, extensions: theirs }).toEqual(guardian.data);
  expect(out.spec).toBe('chara_card_v2');
  expect(out.first_mes).toBe((guardian.data as { first_mes: string }).first_mes);
});

const text = (max: number) =>
  fc.string({ maxLength: max, unit: 'grapheme' }).filter((s) => wellFormed(s) === s);
const npcArb = fc.record({
  name: fc
    .string({ minLength: 1, maxLength: 100, unit: 'grapheme' })
    .filter((s) => s.length <= 100 && plainName(wellFormed(s)) === s && s.length > 0),
  jobTitle: text(60).map((s) => s.trim()),
  description: text(3000),
  prompt: text(500),
  provider: fc.constantFrom(null, 'openai'),
  model: fc.constantFrom(null, 'gpt-x'),
  thinking: fc.boolean(),
  personality: text(200),
  scenario: text(200),
  greeting: text(300),
  alternateGreetings: fc.array(text(100), { maxLength: 4 }),
  exampleMessages: text(200),
  postHistoryInstructions: text(200),
  creator: text(50),
  creatorNotes: text(200),
  characterVersion: text(20),
  tags: fc.array(text(20), { maxLength: 5 }),
  extensions: fc.dictionary(
    fc.string({ minLength: 1, maxLength: 10 }).filter((k) => k !== 'agentsville' && k !== '__proto__'),
    fc.jsonValue({ maxDepth: 2 }),
    { maxKeys: 3 },
  ),
  cardExtra: fc.constant({}),
});
const entryArb = fc.record({
  keys: fc.array(text(20), { maxLength: 3 }),
  content: text(200),
  extensions: fc.constant({}),
  enabled: fc.boolean(),
  insertion_order: fc.integer({ min: 0, max: 1000 }),
  constant: fc.boolean(),
  selective: fc.boolean(),
  secondary_keys: fc.array(text(20), { maxLength: 2 }),
  position: fc.constantFrom('before_char' as const, 'after_char' as const),
});
const bookArb = fc.option(
  fc.record({ name: text(30), extensions: fc.constant({}), entries: fc.array(entryArb, { maxLength: 4 }) }),
  { nil: null },
);

it('import∘export gives back every field: V2 and V3, JSON and PNG (fast-check over every field)', async () => {
  await fc.assert(
    fc.asyncProperty(
      npcArb,
      bookArb,
      fc.constantFrom('v2', 'v3'),
      fc.boolean(),
      async (npc, book, spec, asPng) => {
        // JSON round trip normalises -0 and undefined the way a file would.
        const card = JSON.parse(JSON.stringify(spec === 'v2' ? toCardV2(npc, book) : toCardV3(npc, book)));
        const json = JSON.stringify(card);
        const bytes = asPng
          ? pngWithText({ [spec === 'v2' ? 'chara' : 'ccv3']: Buffer.from(json).toString('base64') })
          : new TextEncoder().encode(json);
        if (asPng)
          expect(pngTextChunks(bytes).get(spec === 'v2' ? 'chara' : 'ccv3')).toBe(
            Buffer.from(json).toString('base64'),
          );
        const back = await readCard(bytes);
        expect(back.spec).toBe(spec);
        expect(back.npc).toEqual(JSON.parse(JSON.stringify(npc)));
        expect(back.lorebook).toEqual(book && JSON.parse(JSON.stringify(book)));
      },
    ),
    { numRuns: 200 },
  );
});

it('a V1 card (fields at the top level) reads its six fields; a V3 card keeps its own fields for a V3 export', async () => {
  const v1 = await readCard(
    bytesOf({
      name: 'Old',
      description: 'd',
      personality: 'p',
      scenario: 's',
      first_mes: 'hi',
      mes_example: 'e',
    }),
  );
  expect(v1.spec).toBe('v1');
  expect(v1.npc).toMatchObject({
    description: 'd',
    personality: 'p',
    scenario: 's',
    greeting: 'hi',
    exampleMessages: 'e',
  });
  const v3 = {
    spec: 'chara_card_v3',
    spec_version: '3.0',
    data: {
      ...(guardian.data as object),
      nickname: 'Mara',
      group_only_greetings: ['We meet as a group.'],
      assets: [{ type: 'icon', uri: 'ccdefault:', name: 'main', ext: 'png' }],
      creation_date: 1700000000,
    },
  };
  const r = await readCard(bytesOf(v3));
  expect(r.npc.cardExtra).toEqual({
    nickname: 'Mara',
    group_only_greetings: ['We meet as a group.'],
    assets: [{ type: 'icon', uri: 'ccdefault:', name: 'main', ext: 'png' }],
    creation_date: 1700000000,
  });
  const out = toCardV3(r.npc, r.lorebook);
  const { agentsville: _, ...theirs } = out.data.extensions as Record<string, unknown>;
  expect({ ...out.data, extensions: theirs }).toEqual(v3.data);
});

it('a World Info file is told apart from a card; oversized fields are refused in words', async () => {
  await expect(
    readCard(bytesOf({ entries: { '0': { uid: 0, key: ['x'], content: 'y' } } })),
  ).rejects.toMatchObject({ code: 'WORLD_INFO' });
  await expect(readCard(bytesOf({ name: 'X', personality: 'p'.repeat(20_001) }))).rejects.toThrow(
    /personality is 20,001 characters/,
  );
  await expect(
    readCard(bytesOf(v2({ name: 'X', alternate_greetings: Array(33).fill('hi') }))),
  ).rejects.toThrow(/33 alternate greetings/);
  // NUL and half surrogate pairs cannot be stored: they are made storable on the way in, in the lorebook too.
  const r = await readCard(
    bytesOf(
      v2({
        name: 'A\u0000B',
        description: 'x\ud800y',
        character_book: { entries: [{ keys: ['k'], content: 'a\u0000' }] },
      }),
    ),
  );
  expect(r.npc.name).not.toContain('\u0000');
  expect(r.lorebook?.entries[0]?.content).not.toContain('\u0000');
});
