import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { titleFrom } from '../../src/conversations/index.ts';
import {
  assembleSystemPrompt,
  chooseSpeaker,
  estimateTokens,
  instructionsFor,
  promptChars,
  rosterLine,
  systemPromptParts,
  toModelMessages,
  windowHistory,
} from '../../src/turn/index.ts';
import { resolveModel } from '../../src/village/index.ts';

const t = (text: string) => ({ text });

describe('windowing', () => {
  it('keeps the longest tail within the budget at four characters per token', () => {
    const items = [t('a'.repeat(400)), t('b'.repeat(400)), t('c'.repeat(400)), t('d'.repeat(400))];
    const { kept, dropped } = windowHistory(items, 200, (x) => estimateTokens(x.text));
    expect(kept.map((x) => x.text[0])).toEqual(['c', 'd']);
    expect(dropped.map((x) => x.text[0])).toEqual(['a', 'b']);
  });

  it('always keeps the final turn, even when it alone exceeds the budget', () => {
    const { kept, dropped } = windowHistory([t('small'), t('x'.repeat(10_000))], 100, (x) =>
      estimateTokens(x.text),
    );
    expect(kept).toHaveLength(1);
    expect(kept[0]!.text.length).toBe(10_000);
    expect(dropped).toHaveLength(1);
  });

  it('keeps a contiguous tail: a small old turn behind a big one is dropped too', () => {
    const items = [t('tiny'), t('x'.repeat(800)), t('y'.repeat(100))];
    const { kept } = windowHistory(items, 210, (x) => estimateTokens(x.text));
    expect(kept.map((x) => x.text[0])).toEqual(['y']);
  });

  it('drops nothing when everything fits', () => {
    expect(windowHistory([t('a'), t('b')], 60_000, (x) => estimateTokens(x.text)).dropped).toEqual([]);
  });

  it('on overflow, folds down to the refill level; while everything fits, to nothing', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 50, max: 4000 }),
        (sizes, budget) => {
          const items = sizes.map((n) => t('x'.repeat(n * 4)));
          const refill = Math.floor(budget * 0.75);
          const { kept, dropped } = windowHistory(items, budget, (x) => estimateTokens(x.text), refill);
          const tokens = (xs: { text: string }[]) => xs.reduce((a, x) => a + x.text.length / 4, 0);
          expect([...dropped, ...kept]).toEqual(items);
          if (tokens(items) <= budget) expect(dropped).toEqual([]);
          else if (kept.length > 1) {
            expect(tokens(kept)).toBeLessThanOrEqual(refill);
            // The longest such tail: one more turn would not fit.
            if (dropped.length) expect(tokens([dropped.at(-1)!, ...kept])).toBeGreaterThan(refill);
          } else expect(kept).toEqual([items.at(-1)]);
        },
      ),
    );
  });
});

describe('system prompt', () => {
  const all = {
    identity: { name: 'Ada', jobTitle: 'Librarian', description: 'Keeps the stacks.' },
    playerPrompt: 'PLAYER PROMPT',
    skills: [{ name: 'cataloguing', description: 'SKILL INDEX' }],
    unreachableServers: ['UNREACHABLE-SERVER'],
    memories: ['RECALLED MEMORY'],
    roster: [{ name: 'Bo', jobTitle: 'Smith', description: 'ROSTER. Second sentence.' }],
    summary: 'ROLLING SUMMARY',
  };

  it('puts every slot in the seed order, identity first and summary last', () => {
    const prompt = assembleSystemPrompt(all);
    const order = [
      'You are Ada, Librarian.',
      'PLAYER PROMPT',
      'SKILL INDEX',
      'UNREACHABLE-SERVER',
      'RECALLED MEMORY',
      'ROSTER.',
      'ROLLING SUMMARY',
    ].map((needle) => prompt.indexOf(needle));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(prompt.startsWith('# Who you are')).toBe(true);
    expect(prompt).not.toContain('Second sentence');
  });

  it('leaves empty slots out', () => {
    const prompt = assembleSystemPrompt({
      ...all,
      skills: [],
      unreachableServers: [],
      memories: [],
      roster: [],
      summary: '',
    });
    expect(prompt).toBe('# Who you are\nYou are Ada, Librarian.\nKeeps the stacks.\n\nPLAYER PROMPT');
  });

  it('marks the stable head for an Anthropic prompt cache; the text sent is the same for every kind', () => {
    const parts = systemPromptParts(all);
    expect(parts.head).toContain('SKILL INDEX');
    expect(parts.head).not.toContain('RECALLED MEMORY');
    expect(parts.tail.startsWith('# Tools unavailable')).toBe(true);
    const whole = assembleSystemPrompt(all);
    expect(instructionsFor('openai', parts)).toBe(whole);
    const blocks = instructionsFor('anthropic', parts) as { content: string; providerOptions?: unknown }[];
    expect(blocks.map((b) => b.content).join('\n\n')).toBe(whole);
    expect(blocks[0]!.providerOptions).toEqual({ anthropic: { cacheControl: { type: 'ephemeral' } } });
    expect(blocks[1]!.providerOptions).toBeUndefined();
    // Nothing after the head: one block.
    const short = systemPromptParts({
      ...all,
      unreachableServers: [],
      memories: [],
      roster: [],
      summary: '',
    });
    expect(instructionsFor('anthropic', short)).toHaveLength(1);
  });

  it('cuts roster descriptions to one sentence or 160 characters', () => {
    expect(rosterLine('First one. Second one.')).toBe('First one.');
    const long = rosterLine('x'.repeat(500));
    expect(long.length).toBe(160);
    expect(long.endsWith('…')).toBe(true);
  });
});

describe('Party attribution', () => {
  const turns = [
    { role: 'player' as const, npcName: null, text: 'Hello both' },
    { role: 'npc' as const, npcName: 'Ada', text: 'Hi, I am Ada.' },
    { role: 'npc' as const, npcName: 'Bo', text: 'And I am Bo.' },
    { role: 'npc' as const, npcName: 'Bo', text: '' },
  ];

  it('prefixes each prior reply with the name of the NPC that wrote it in a Party', () => {
    expect(toModelMessages(turns, true)).toEqual([
      { role: 'user', content: 'Hello both' },
      { role: 'assistant', content: '[Ada]: Hi, I am Ada.' },
      { role: 'assistant', content: '[Bo]: And I am Bo.' },
    ]);
  });

  it('leaves a solo Conversation byte-identical', () => {
    const solo = turns.slice(0, 2);
    expect(toModelMessages(solo, false).map((m) => m.content)).toEqual(solo.map((x) => x.text));
  });
});

describe('choosing the speaker', () => {
  const ada = { id: 'a', name: 'Ada' };
  const bo = { id: 'b', name: 'Bo' };
  it('is the only NPC there', () => expect(chooseSpeaker([ada], 'hi')).toBe(ada));
  it('is the NPC addressed by id', () => expect(chooseSpeaker([ada, bo], 'hi', 'b')).toBe(bo));
  it('is undefined for an id not in the Conversation', () =>
    expect(chooseSpeaker([ada, bo], 'hi', 'z')).toBeUndefined());
  it('is the NPC @mentioned first', () => expect(chooseSpeaker([ada, bo], 'so @bo and @ada')).toBe(bo));
  it('is the NPC named at the start', () => expect(chooseSpeaker([ada, bo], 'Bo, what now?')).toBe(bo));
  it('falls back to the last speaker, then the first', () => {
    expect(chooseSpeaker([ada, bo], 'and?', undefined, 'b')).toBe(bo);
    expect(chooseSpeaker([ada, bo], 'and?')).toBe(ada);
  });
});

describe('model resolution', () => {
  const village = { defaultProvider: 'openai', defaultModel: 'gpt-x' };
  it('inherits both from the Village when the NPC names neither', () =>
    expect(resolveModel({ provider: null, model: null }, village)).toEqual({
      provider: 'openai',
      model: 'gpt-x',
    }));
  it("uses the NPC's own", () =>
    expect(resolveModel({ provider: 'anthropic', model: 'c' }, village)).toEqual({
      provider: 'anthropic',
      model: 'c',
    }));
  it('takes the Village Provider for a Model alone', () =>
    expect(resolveModel({ provider: null, model: 'm' }, village)).toEqual({
      provider: 'openai',
      model: 'm',
    }));
  it('does not pair another Provider with the Village Model', () =>
    expect(resolveModel({ provider: 'google', model: null }, village)).toBeUndefined());
  it('resolves nothing when nothing is named', () =>
    expect(
      resolveModel({ provider: null, model: null }, { defaultProvider: null, defaultModel: null }),
    ).toBeUndefined());
});

describe('titles', () => {
  it('are at most 80 characters on one line, cut at a word with an ellipsis, never splitting a grapheme', () => {
    expect(titleFrom('  Hello\n\nworld  ')).toBe('Hello world');
    const emoji = '👩‍👩‍👧'.repeat(100);
    const cut = titleFrom(emoji);
    expect([...new Intl.Segmenter().segment(cut)].length).toBe(80);
    expect(cut.endsWith('👩‍👩‍👧…')).toBe(true);
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-zé]{1,12}$/), { minLength: 1, maxLength: 40 }), (words) => {
        const text = words.join(' ');
        const title = titleFrom(text);
        expect([...new Intl.Segmenter().segment(title)].length).toBeLessThanOrEqual(80);
        if (text.length <= 80) expect(title).toBe(text);
        else {
          // Whole words only, then the ellipsis.
          expect(title.endsWith('…')).toBe(true);
          expect(`${text} `.startsWith(`${title.slice(0, -1)} `)).toBe(true);
        }
      }),
    );
  });
});

describe('the prompt size an unreported reply is charged for', () => {
  const text = fc.string({ maxLength: 200 });
  const turn = fc.record({
    role: fc.constantFrom('player' as const, 'npc' as const),
    text,
    npcName: fc.constant('Ada'),
  });

  it('counts the text of every message sent, in a Party with its authors, and nothing of their JSON', () => {
    fc.assert(
      fc.property(fc.array(turn, { maxLength: 30 }), fc.boolean(), (turns, party) => {
        const messages = toModelMessages(turns, party);
        const texts = messages.map((m) => m.content as string);
        expect(promptChars(messages)).toBe(texts.reduce((n, x) => n + x.length, 0));
      }),
    );
  });

  it('counts an attachment at its size in bytes, a tool step as its JSON', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 5_000 }), text, (bytes, said) => {
        const sent = promptChars([
          {
            role: 'user',
            content: [
              { type: 'text', text: said },
              { type: 'file', mediaType: 'image/png', data: { type: 'data', data: bytes } },
              { type: 'image', image: bytes },
            ],
          },
        ]);
        // JSON would count a byte as up to eleven characters ("1234":255,).
        expect(sent).toBe(said.length + 2 * bytes.byteLength);
      }),
    );
    const input = { text: 'remember this' };
    expect(
      promptChars([
        {
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'remember', input }],
        },
      ]),
    ).toBe(JSON.stringify({ type: 'tool-call', toolCallId: 'c1', toolName: 'remember', input }).length);
  });
});
