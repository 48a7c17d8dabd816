import fc from 'fast-check';
import { expect, it } from 'vitest';
import { CardError, readCard, toCardV2 } from '../../src/cards/card.ts';
import { pngTextChunks, pngWithText } from '../../src/cards/png.ts';

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
    expect(r.npc.prompt.length).toBeLessThanOrEqual(20_000);
    expect(r.npc.description.length).toBeLessThanOrEqual(2000);
    for (const m of r.lorebook) expect(m.length).toBeLessThanOrEqual(2000);
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

it('maps a V2 card: macros, sections, lorebook entries with their keys, disabled ones left out', async () => {
  const r = await readCard(
    new TextEncoder().encode(
      JSON.stringify({
        spec: 'chara_card_v2',
        spec_version: '2.0',
        data: {
          name: 'Seraphina',
          description: '{{char}} is a guardian of the forest.',
          personality: 'kind',
          scenario: '{{user}} wakes in a glade.',
          first_mes: '*{{char}} smiles.* Hello.',
          mes_example: '<START>\n{{user}}: hi\n{{char}}: hello',
          system_prompt: 'Stay in character.',
          character_book: {
            entries: [
              { keys: ['glade', 'forest'], content: 'The glade is warded.', enabled: true },
              { keys: ['secret'], content: 'hidden', enabled: false },
            ],
          },
        },
      }),
    ),
  );
  expect(r.spec).toBe('v2');
  expect(r.npc.description).toBe('Seraphina is a guardian of the forest.');
  expect(r.npc.prompt).toContain('Stay in character.');
  expect(r.npc.prompt).toContain('Scenario: the Player wakes in a glade.');
  expect(r.npc.prompt).toContain('How you first greeted the Player:\n*Seraphina smiles.* Hello.');
  expect(r.lorebook).toEqual(['(glade, forest) The glade is warded.']);
  expect(r.notes).toEqual(['1 lorebook entry was left out (disabled, empty, or past 500).']);
});

it('a V2 card exported and read back gives the same NPC and lorebook; the PNG keeps it in a chara chunk', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        name: fc
          .string({ minLength: 1, maxLength: 100 })
          .filter((s) => s.trim() === s && s.length > 0 && !/\{\{|<(bot|user)>/i.test(s)),
        jobTitle: fc.string({ maxLength: 100 }).map((s) => s.trim()),
        description: fc
          .string({ maxLength: 2000 })
          .map((s) => s.trim())
          .filter((s) => !/\{\{|<(bot|user)>/i.test(s)),
        prompt: fc
          .string({ maxLength: 3000 })
          .map((s) => s.trim())
          .filter((s) => !/\{\{|<(bot|user)>/i.test(s)),
        provider: fc.constantFrom(null, 'openai'),
        model: fc.constantFrom(null, 'gpt-x'),
        thinking: fc.boolean(),
      }),
      fc.array(
        fc.string({ minLength: 1, maxLength: 300 }).map((s) => `${s.trim()}x`),
        { maxLength: 4 },
      ),
      async (npc, lorebook) => {
        const json = JSON.stringify(toCardV2(npc, lorebook));
        const png = pngWithText({ chara: Buffer.from(json).toString('base64') });
        expect(pngTextChunks(png).get('chara')).toBe(Buffer.from(json).toString('base64'));
        const back = await readCard(png);
        expect(back.npc).toEqual(npc);
        expect(back.lorebook).toEqual(lorebook);
      },
    ),
    { numRuns: 300 },
  );
});

it('a name is put in as it is: replacement patterns in it do not expand, and an oversized field is refused before', async () => {
  const name = "$'".repeat(50);
  const r = await readCard(
    new TextEncoder().encode(
      JSON.stringify({ name, description: `${'{{char}} '.repeat(80)}x`, scenario: '$& {{user}}' }),
    ),
  );
  // 80 names of 100 characters: longer than a description holds, so it moved into the prompt, unexpanded.
  expect(r.npc.prompt.length).toBeLessThan(10_000);
  expect(r.npc.prompt.startsWith(`${name} ${name}`)).toBe(true);
  expect(r.npc.prompt).toContain('Scenario: $& the Player');
  await expect(
    readCard(new TextEncoder().encode(JSON.stringify({ name: 'X', personality: 'p'.repeat(20_001) }))),
  ).rejects.toThrow(/personality is 20,001 characters/);
  // NUL and half surrogate pairs cannot be stored: they are made storable on the way in.
  expect(
    (await readCard(new TextEncoder().encode(JSON.stringify({ name: 'A\u0000B', description: 'x\ud800y' }))))
      .npc,
  ).toMatchObject({
    name: expect.not.stringContaining('\u0000'),
  });
});
