import fc from 'fast-check';
import { expect, it } from 'vitest';
import { readCard, toCardV2, toCardV3 } from '../../src/cards/card.ts';
import { pngWithText } from '../../src/cards/png.ts';
import { plainName, wellFormed } from '../../src/parts/index.ts';

// Issue 29's "Done when": round trips over generated cards for V1 too. A V1 card (its six fields at the top
// level, JSON or a PNG's `chara` chunk) reads into an NPC whose V2 and V3 exports carry the six fields exactly,
// and which reads back as the same NPC.
const text = (max: number) =>
  fc.string({ maxLength: max, unit: 'grapheme' }).filter((s) => wellFormed(s) === s);
const v1Arb = fc.record({
  name: fc
    .string({ minLength: 1, maxLength: 100, unit: 'grapheme' })
    .filter((s) => s.length <= 100 && plainName(wellFormed(s)) === s && s.length > 0),
  description: text(3000),
  personality: text(300),
  scenario: text(300),
  first_mes: text(500),
  mes_example: text(300),
});

it('a generated V1 card, JSON or PNG, exports as V2 and V3 with its six fields and reads back the same', async () => {
  await fc.assert(
    fc.asyncProperty(v1Arb, fc.boolean(), async (v1, asPng) => {
      const json = JSON.stringify(v1);
      const bytes = asPng
        ? pngWithText({ chara: Buffer.from(json).toString('base64') })
        : new TextEncoder().encode(json);
      const read = await readCard(bytes);
      expect(read.spec).toBe('v1');
      expect(read.lorebook).toBeNull();
      const npc = { ...read.npc };
      for (const exported of [toCardV2(npc, null), toCardV3(npc, null)]) {
        expect(exported.data).toMatchObject(v1);
        const again = await readCard(new TextEncoder().encode(JSON.stringify(exported)));
        expect(again.npc).toEqual(read.npc);
      }
    }),
    { numRuns: 150 },
  );
});
