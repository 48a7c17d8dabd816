import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import sharp from 'sharp';

/**
 * What a thread's link card shows: made by the AppView from the thread's *published* records only (the same
 * data the reader gets), so nothing withheld or covered can reach the picture.
 */
export interface CardInput {
  title: string;
  author: string;
  /** The first published texts, in order; runs of █ in them are drawn as bars. */
  lines: string[];
}

export const CARD_WIDTH = 1200;
export const CARD_HEIGHT = 630;
/** Bounds on what one picture lays out (satori's work grows with the text): memory and time both. */
const MAX_TITLE = 120;
const MAX_LINE = 160;
const MAX_LINES = 3;
// Generous for a cold start on a busy machine (the layout engine compiles once, and a first CJK card parses its
// font pieces: 7–8 s seen on a loaded 2-core machine); a warm card takes well under a second.
const RENDER_TIMEOUT_MS = 12_000;
const CACHED = 64;

/** The input cut to its bounds, whitespace folded; the cache key is taken after this. */
export function boundCard(input: CardInput): CardInput {
  const fold = (s: string, max: number) => {
    const t = s.replace(/\s+/g, ' ').trim();
    return [...t].length > max ? `${[...t].slice(0, max - 1).join('')}…` : t;
  };
  return {
    title: fold(input.title, MAX_TITLE) || 'A conversation',
    author: fold(input.author, 80),
    lines: input.lines
      .map((l) => fold(l, MAX_LINE))
      .filter(Boolean)
      .slice(0, MAX_LINES),
  };
}

type Node = { type: string; props: { style?: Record<string, unknown>; children?: unknown } };
const el = (type: string, style: Record<string, unknown>, children?: unknown): Node => ({
  type,
  props: { style, children },
});

/** One line: its words, and each run of █ as a bar of one width (as the reader shows it, it says no length). */
function lineNode(line: string): Node {
  const parts = line.split(/(█+)/).filter(Boolean);
  return el(
    'div',
    {
      display: 'flex',
      flexWrap: 'wrap',
      alignItems: 'center',
      fontSize: 30,
      lineHeight: 1.35,
      color: '#1f2328',
    },
    parts.map((p) =>
      p.startsWith('█')
        ? el('div', { width: 110, height: 30, margin: '0 8px', background: '#1f2328', borderRadius: 4 })
        : el('div', { display: 'flex' }, p),
    ),
  );
}

/**
 * The card's tree for satori: text and boxes only — no image, no URL, no font but the ones given — so rendering
 * it cannot fetch anything. Every string is a text node (satori draws glyphs; nothing is parsed as markup).
 */
export function cardTree(input: CardInput): Node {
  const c = boundCard(input);
  return el(
    'div',
    {
      width: CARD_WIDTH,
      height: CARD_HEIGHT,
      display: 'flex',
      flexDirection: 'column',
      padding: '56px 64px',
      background: '#fbfaf7',
      fontFamily: 'Inter',
    },
    [
      el('div', { display: 'flex', fontSize: 26, color: '#57606a' }, `${c.author} · AgentsVille`),
      el(
        'div',
        { display: 'flex', fontSize: 56, fontWeight: 700, color: '#1f2328', margin: '18px 0 28px' },
        c.title,
      ),
      el(
        'div',
        {
          display: 'flex',
          flexDirection: 'column',
          gap: 18,
          overflow: 'hidden',
          flexGrow: 1,
          borderLeft: '6px solid #d0d7de',
          paddingLeft: 24,
        },
        c.lines.map(lineNode),
      ),
    ],
  );
}

type Font = { name: string; data: Buffer; weight: 400 | 700; style: 'normal' };
type Satori = (
  tree: unknown,
  options: {
    width: number;
    height: number;
    fonts: Font[];
    loadAdditionalAsset: (language: string, segment: string) => Promise<string | Font[]>;
  },
) => Promise<string>;
/**
 * satori's own type declarations import React's, whose global DOM stand-ins would change how the server's
 * program (and its Playwright tests) type the DOM: it is imported by a name the type checker does not follow.
 */
const SATORI: string = 'satori';
let satori: Promise<Satori> | undefined;

const require = createRequire(import.meta.url);
let fonts: Font[] | undefined;
function loadFonts() {
  const file = (w: number) => require.resolve(`@fontsource/inter/files/inter-latin-${w}-normal.woff`);
  fonts ??= ([400, 700] as const).map((weight) => ({
    name: 'Inter',
    data: readFileSync(file(weight)),
    weight,
    style: 'normal' as const,
  }));
  return fonts;
}

/**
 * Noto Sans SC (Han, kana, Cyrillic…), then Noto Sans KR (Hangul), as @fontsource ships them: about 100 pieces
 * per weight (30–80 KB .woff each) by Unicode range, as their CSS says. A card loads only the pieces its
 * characters are in (satori asks only for text Inter lacks), so a Latin card loads none; a piece read is kept
 * (the least recently used dropped past a bound), and satori keeps its parse by the same Buffer.
 */
const NOTO = [
  { pkg: '@fontsource/noto-sans-sc', file: 'noto-sans-sc', name: 'Noto Sans SC' },
  { pkg: '@fontsource/noto-sans-kr', file: 'noto-sans-kr', name: 'Noto Sans KR' },
] as const;
type Noto = (typeof NOTO)[number];
const NOTO_PIECES_KEPT = 64;
const HANGUL = /\p{scx=Hangul}/u;
const notoRanges = new Map<Noto, { piece: string; from: number; to: number }[]>();
const notoFiles = new Map<string, Buffer>();
let notoReads = 0;

function rangesOf(family: Noto): { piece: string; from: number; to: number }[] {
  const known = notoRanges.get(family);
  if (known) return known;
  const css = readFileSync(require.resolve(`${family.pkg}/400.css`), 'utf8');
  const ranges: { piece: string; from: number; to: number }[] = [];
  const pieceOf = new RegExp(`files/${family.file}-([a-z0-9-]+?)-400-normal\\.woff\\)`);
  for (const face of css.split('@font-face').slice(1)) {
    const piece = pieceOf.exec(face)?.[1];
    const unicode = /unicode-range:\s*([^;]+);/.exec(face)?.[1];
    if (!piece || !unicode) continue;
    for (const r of unicode.split(',')) {
      const [a, b] = r.trim().replace(/^U\+/i, '').split('-');
      const from = Number.parseInt(a ?? '', 16);
      if (!Number.isNaN(from)) ranges.push({ piece, from, to: b ? Number.parseInt(b, 16) : from });
    }
  }
  notoRanges.set(family, ranges);
  return ranges;
}

function notoFile(family: Noto, piece: string, weight: 400 | 700): Buffer {
  const key = `${family.file}-${piece}-${weight}`;
  let data = notoFiles.get(key);
  if (data) notoFiles.delete(key);
  else {
    data = readFileSync(require.resolve(`${family.pkg}/files/${key}-normal.woff`));
    notoReads++;
  }
  notoFiles.set(key, data);
  if (notoFiles.size > NOTO_PIECES_KEPT) notoFiles.delete(notoFiles.keys().next().value!);
  return data;
}

/** The pieces of the Noto fonts that hold the segment's characters, in both weights the card uses. */
function notoFor(segment: string): Font[] {
  const pieces = new Map<string, { family: Noto; piece: string }>();
  for (const ch of segment) {
    const cp = ch.codePointAt(0)!;
    // SC's CSS names some Hangul its pieces have no glyph for: Hangul is KR's.
    for (const family of HANGUL.test(ch) ? [NOTO[1], NOTO[0]] : NOTO) {
      const hit = rangesOf(family).find((r) => cp >= r.from && cp <= r.to);
      if (!hit) continue;
      pieces.set(`${family.file}-${hit.piece}`, { family, piece: hit.piece });
      break;
    }
  }
  return [...pieces.values()].flatMap(({ family, piece }) =>
    ([400, 700] as const).map((weight) => ({
      // One name per piece: satori keeps one font per name and weight.
      name: `${family.name} ${piece}`,
      data: notoFile(family, piece, weight),
      weight,
      style: 'normal' as const,
    })),
  );
}

/**
 * An emoji as Twemoji's SVG (from @twemoji/svg, on disk) in a data: URL, which satori draws in place of the
 * glyph. Twemoji names a file by the code points, less U+FE0F unless the sequence is joined by a ZWJ.
 */
const emojiPictures = new Map<string, string | null>();
function emojiPicture(grapheme: string): string | undefined {
  const hit = emojiPictures.get(grapheme);
  if (hit !== undefined) return hit ?? undefined;
  const points = (s: string) => [...s].map((c) => c.codePointAt(0)!.toString(16)).join('-');
  const names = [
    grapheme.includes('\u200d') ? grapheme : grapheme.replace(/\ufe0f/g, ''),
    grapheme.replace(/\ufe0f/g, ''),
  ];
  let url: string | null = null;
  for (const name of new Set(names.map(points))) {
    if (!/^[0-9a-f-]{1,80}$/.test(name)) continue;
    try {
      const svg = readFileSync(path.join(twemojiDir(), `${name}.svg`));
      url = `data:image/svg+xml;base64,${svg.toString('base64')}`;
      break;
    } catch {
      // Not an emoji Twemoji draws: try the next name, else a missing glyph.
    }
  }
  if (emojiPictures.size >= 512) emojiPictures.delete(emojiPictures.keys().next().value!);
  emojiPictures.set(grapheme, url);
  return url ?? undefined;
}
let twemoji: string | undefined;
const twemojiDir = () => {
  twemoji ??= path.dirname(require.resolve('@twemoji/svg/package.json'));
  return twemoji;
};

/** How many font pieces have been read from disk since the start (a Latin-only card reads none). */
export const additionalFontReads = (): number => notoReads;

/** The PNG, or a rejection after the time bound (sharp's own timeout stops its work; satori's is bounded by size). */
export async function renderCard(input: CardInput): Promise<Buffer> {
  const work = (async () => {
    satori ??= import(SATORI).then((m: { default: Satori }) => m.default);
    const svg = await (await satori)(cardTree(input), {
      width: CARD_WIDTH,
      height: CARD_HEIGHT,
      fonts: loadFonts(),
      // A glyph Inter lacks: an emoji is a Twemoji picture, anything else the Noto Sans SC or KR pieces that have
      // it (CJK, kana, Hangul, Cyrillic…); both read from disk, never fetched. What neither has stays a missing glyph.
      loadAdditionalAsset: async (language, segment) =>
        language === 'emoji' ? (emojiPicture(segment) ?? []) : notoFor(segment),
    });
    return sharp(Buffer.from(svg)).png({ compressionLevel: 8 }).timeout({ seconds: 3 }).toBuffer();
  })();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('The link card took too long to draw.')), RENDER_TIMEOUT_MS);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Link cards kept in memory by what they show (a thread edited or republished shows something else, so gets a
 * new key), the least recently used dropped past a bound; one drawing at a time for the same card.
 */
export class LinkCards {
  private readonly cache = new Map<string, Promise<Buffer>>();
  constructor(private readonly draw: (input: CardInput) => Promise<Buffer> = renderCard) {}

  static keyOf(input: CardInput): string {
    return createHash('sha256')
      .update(JSON.stringify(boundCard(input)))
      .digest('base64url')
      .slice(0, 27);
  }

  get(input: CardInput): { key: string; png: Promise<Buffer> } {
    const key = LinkCards.keyOf(input);
    let png = this.cache.get(key);
    if (png) this.cache.delete(key);
    else {
      png = this.draw(boundCard(input));
      // A failed drawing is not kept: the next request tries again.
      png.catch(() => this.cache.get(key) === png && this.cache.delete(key));
    }
    this.cache.set(key, png);
    if (this.cache.size > CACHED) this.cache.delete(this.cache.keys().next().value!);
    return { key, png };
  }
}
