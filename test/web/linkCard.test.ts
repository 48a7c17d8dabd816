import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { expect, it, vi } from 'vitest';
import { cardOf } from '../../src/appview/pages.ts';
import type { ThreadView } from '../../src/appview/thread.ts';
import {
  boundCard,
  CARD_HEIGHT,
  CARD_WIDTH,
  cardTree,
  LinkCards,
  renderCard,
} from '../../src/web/linkCard.ts';

// #30: a thread's link card is drawn on the server from its published text only, bounded, and cannot fetch.

const thread = (messages: Record<string, unknown>[]): ThreadView => ({
  uri: 'at://did:plc:x/click.aligned.chat.session/3kabcdefghijk',
  author: { did: 'did:plc:x', handle: 'alice.test' },
  session: { title: 'The map question' },
  messages: messages.map((record, i) => ({
    uri: `u${i}`,
    rkey: `r${i}`,
    record,
    refs: [],
    mentions: [],
    labels: [],
  })),
  labels: [],
});

it('the card shows the title, the author and the first published texts; a withheld turn adds nothing', () => {
  const card = cardOf(
    thread([
      // (A withheld record carries no text; one that did would still not be shown.)
      { role: 'user', withheld: true, text: 'never shown' },
      { role: 'user', text: 'Is the old map right?' },
      { role: 'assistant', text: 'The code is ████████.' },
      { role: 'user', text: '   ' },
      { role: 'user', text: 'Third' },
      { role: 'user', text: 'Fourth' },
    ]),
  );
  expect(card).toEqual({
    title: 'The map question',
    author: '@alice.test',
    lines: ['Is the old map right?', 'The code is ████████.', 'Third'],
  });
});

/** Every node of the tree, and every string in it. */
function walk(node: unknown, types: string[], texts: string[]) {
  if (typeof node === 'string') texts.push(node);
  else if (Array.isArray(node)) for (const n of node) walk(n, types, texts);
  else if (node && typeof node === 'object') {
    const { type, props } = node as { type: string; props: { children?: unknown; src?: unknown } };
    types.push(type);
    expect(props.src).toBeUndefined();
    walk(props.children, types, texts);
  }
}

it('the tree is boxes and text only, bars drawn as boxes, within its bounds', () => {
  const types: string[] = [];
  const texts: string[] = [];
  const long = 'word '.repeat(500);
  walk(
    cardTree({
      title: long,
      author: '@a',
      lines: ['a ████████ b', '<img src="http://x/y.png">', long, long, long],
    }),
    types,
    texts,
  );
  expect(new Set(types)).toEqual(new Set(['div']));
  expect(texts.join('')).not.toContain('█');
  expect(texts).toContain('<img src="http://x/y.png">');
  const bounded = boundCard({ title: long, author: '@a', lines: [long, long, long, long] });
  expect([...bounded.title].length).toBeLessThanOrEqual(120);
  expect(bounded.lines).toHaveLength(3);
  for (const l of bounded.lines) expect([...l].length).toBeLessThanOrEqual(160);
});

it('drawing a card whose text names images and links fetches nothing, and makes a 1200×630 PNG', async () => {
  let requests = 0;
  const server = http.createServer((_req, res) => {
    requests++;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/p.png`;
  try {
    const png = await renderCard({
      title: `<img src="${url}">`,
      author: `![x](${url})`,
      lines: [`<img src="${url}"> ![a](${url}) 🧑‍🚀 日本語 ████████`, `url(${url})`],
    });
    const info = await sharp(png).metadata();
    expect([info.format, info.width, info.height]).toEqual(['png', CARD_WIDTH, CARD_HEIGHT]);
    expect(requests).toBe(0);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
}, 60_000);

it('cards are kept by what they show, the least recent dropped; a failed drawing is tried again', async () => {
  let drawn = 0;
  let fail = false;
  const cards = new LinkCards(async () => {
    drawn++;
    if (fail) throw new Error('timeout');
    return Buffer.from('png');
  });
  const a = { title: 'A', author: '@a', lines: ['x'] };
  await cards.get(a).png;
  await cards.get({ ...a, lines: ['x  '] }).png; // the same card once bounded
  expect(drawn).toBe(1);
  await cards.get({ ...a, title: 'A, edited' }).png;
  expect(drawn).toBe(2);
  for (let i = 0; i < 64; i++) await cards.get({ ...a, title: `T${i}` }).png;
  const before = drawn;
  await cards.get(a).png; // dropped by now
  expect(drawn).toBe(before + 1);
  fail = true;
  const b = { title: 'B', author: '@b', lines: [] };
  await expect(cards.get(b).png).rejects.toThrow('timeout');
  fail = false;
  await cards.get(b).png;
  expect(drawn).toBe(before + 3);
});

it('Chinese, Japanese, Korean and emoji are drawn with their own glyphs, from fonts and pictures on disk, fetching nothing', async () => {
  // The same text in other characters of the same kind: drawn as missing glyphs, both come out the same picture;
  // drawn with their glyphs, they differ.
  const card = (title: string, line: string) => renderCard({ title, author: '@alice.test', lines: [line] });
  const realFetch = globalThis.fetch;
  let fetched = 0;
  globalThis.fetch = (async () => {
    fetched++;
    throw new Error('The card renderer fetched.');
  }) as typeof fetch;
  try {
    // Fonts are read only for text that needs them: a fresh renderer drawing Latin reads none.
    vi.resetModules();
    const fresh = await import('../../src/web/linkCard.ts');
    await fresh.renderCard({ title: 'Plain', author: '@alice.test', lines: ['Only Latin, café and naïve.'] });
    expect(fresh.additionalFontReads()).toBe(0);
    await fresh.renderCard({ title: '地图', author: '@alice.test', lines: [] });
    expect(fresh.additionalFontReads()).toBeGreaterThan(0);
    const [zh1, zh2] = await Promise.all([card('地图对吗', 'x'), card('港口变了', 'x')]);
    expect(zh1.equals(zh2)).toBe(false);
    const [ja1, ja2] = await Promise.all([card('x', 'ひらがなです'), card('x', 'カタカナです')]);
    expect(ja1.equals(ja2)).toBe(false);
    const [ko1, ko2] = await Promise.all([card('x', '한국어 제목'), card('x', '서울의 지도')]);
    expect(ko1.equals(ko2)).toBe(false);
    const [e1, e2] = await Promise.all([card('x', 'a 🗺️ b'), card('x', 'a 🍣 b')]);
    expect(e1.equals(e2)).toBe(false);
    // A sequence joined by ZWJ is one picture, not its parts side by side.
    const [zwj, parts] = await Promise.all([card('x', '🧑‍🚀'), card('x', '🧑🚀')]);
    expect(zwj.equals(parts)).toBe(false);
    expect(fetched).toBe(0);
  } finally {
    globalThis.fetch = realFetch;
  }
}, 60_000);
