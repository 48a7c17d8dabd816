import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
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
// Generous for a cold start on a busy machine (the layout engine compiles once); a warm card takes well under it.
const RENDER_TIMEOUT_MS = 8000;
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

type Satori = (
  tree: unknown,
  options: {
    width: number;
    height: number;
    fonts: { name: string; data: Buffer; weight: 400 | 700; style: 'normal' }[];
    loadAdditionalAsset: (language: string, segment: string) => Promise<string | unknown[]>;
  },
) => Promise<string>;
/**
 * satori's own type declarations import React's, whose global DOM stand-ins would change how the server's
 * program (and its Playwright tests) type the DOM: it is imported by a name the type checker does not follow.
 */
const SATORI: string = 'satori';
let satori: Promise<Satori> | undefined;

let fonts: { name: string; data: Buffer; weight: 400 | 700; style: 'normal' }[] | undefined;
function loadFonts() {
  const require = createRequire(import.meta.url);
  const file = (w: number) => require.resolve(`@fontsource/inter/files/inter-latin-${w}-normal.woff`);
  fonts ??= ([400, 700] as const).map((weight) => ({
    name: 'Inter',
    data: readFileSync(file(weight)),
    weight,
    style: 'normal' as const,
  }));
  return fonts;
}

/** The PNG, or a rejection after the time bound (sharp's own timeout stops its work; satori's is bounded by size). */
export async function renderCard(input: CardInput): Promise<Buffer> {
  const work = (async () => {
    satori ??= import(SATORI).then((m: { default: Satori }) => m.default);
    const svg = await (await satori)(cardTree(input), {
      width: CARD_WIDTH,
      height: CARD_HEIGHT,
      fonts: loadFonts(),
      // A glyph the fonts lack (another script, an emoji) is left out: nothing is fetched to draw it.
      loadAdditionalAsset: async () => [],
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
