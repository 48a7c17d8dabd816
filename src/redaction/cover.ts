import { mergeSpans, REDACTION_BAR, type Span } from './spans.ts';

/**
 * The covering pass: a covered word is covered everywhere. Matching is on a folded form of both sides, so
 * what a reader would recognise as the same word is caught: compatibility forms (full-width letters,
 * ligatures), accents and letters with strokes (ł, ø, æ), case (including ß/SS), apostrophes of every kind;
 * invisible characters (joiners, BOMs, fillers) are ignored, and white space, dashes and underscores all read
 * as one word break. Matching is by substring, not whole words: covering too much is visible in the preview;
 * too little leaks.
 */

/** A string folded for matching, with the original [start, end) of each folded code unit. */
interface Folded {
  text: string;
  from: number[];
  to: number[];
}

// Printable ASCII and the bar itself (which folds to itself): one code unit each, no segmentation needed.
const ASCII = /^[\t\n\r\x20-\x7e\u2588]*$/;
const ASCII_BREAKS = /[ \t\n\r_-]+/g;
const INVISIBLE = /[\p{Mn}\p{Me}\p{Default_Ignorable_Code_Point}]/gu;
const BREAK = /^[\s\p{Pd}\p{Pc}\u2212]+$/u;
const QUOTES = /[\u2018\u2019\u201a\u201b\u2032\u02bc\uff07]/gu;
const STROKES: Record<string, string> = {
  ł: 'l',
  ø: 'o',
  đ: 'd',
  ð: 'd',
  æ: 'ae',
  œ: 'oe',
  ħ: 'h',
  ŧ: 't',
  ŀ: 'l',
};
const STROKED = new RegExp(`[${Object.keys(STROKES).join('')}]`, 'g');
/** What a needle keeps at its core: not the spaces, punctuation and symbols at its edges. */
const EDGES = /^[ \p{P}\p{S}]+|[ \p{P}\p{S}]+$/gu;
const SYMBOL = /\p{S}/u;
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** How one grapheme reads, for matching: '' when invisible, ' ' when it breaks words. */
function foldGrapheme(g: string): string {
  const bare = g.normalize('NFKD').replace(INVISIBLE, '');
  if (!bare) return '';
  if (BREAK.test(bare)) return ' ';
  return bare
    .replace(QUOTES, "'")
    .toUpperCase()
    .toLowerCase()
    .replace(STROKED, (c) => STROKES[c]!)
    .normalize('NFC');
}

function fold(s: string): Folded {
  const from: number[] = [];
  const to: number[] = [];
  let text = '';
  let space = false;
  const push = (f: string, start: number, end: number) => {
    if (!f) {
      // Invisible on its own: joins whatever it sits between.
      if (to.length) to[to.length - 1] = end;
      return;
    }
    if (f === ' ') {
      if (space) {
        to[to.length - 1] = end;
        return;
      }
      space = true;
    } else space = false;
    text += f;
    for (let k = 0; k < f.length; k++) {
      from.push(start);
      to.push(end);
    }
  };
  if (ASCII.test(s)) {
    // Printable ASCII and bars (most text, before and after covering): folds as foldGrapheme would.
    for (let i = 0; i < s.length; i++) {
      const c = s[i]!;
      const breaks = c === ' ' || c === '-' || c === '_' || c === '\n' || c === '\t' || c === '\r';
      push(breaks ? ' ' : c.toLowerCase(), i, i + 1);
    }
    return { text, from, to };
  }
  for (const { segment, index } of segmenter.segment(s))
    push(foldGrapheme(segment), index, index + segment.length);
  return { text, from, to };
}

/**
 * The needles for words a redaction covered: their core (without the spaces, punctuation and symbols at the
 * edges, so "PELICAN-7731," also finds "pelican-7731."), and the whole selection when it has more than
 * punctuation (so "hunter2$%" leaves no "$%" beside a bar, and "🦩" alone is covered too).
 */
export function needlesOf(words: string): string[] {
  const whole = fold(words).text.trim();
  const core = whole.replace(EDGES, '');
  const out = core ? [core] : [];
  // The whole too when its edges hold symbols, or it is nothing but symbols; never for mere punctuation.
  const edges = whole.replace(core, '');
  if (whole !== core && (core ? SYMBOL.test(edges) : SYMBOL.test(whole))) out.push(whole);
  return out;
}

export interface Cover {
  /** The folded needles, longest first. Empty: nothing is covered. */
  readonly needles: readonly string[];
  /** Every place in `s` that shows a covered word, merged, in order. */
  find(s: string): Span[];
  /** `s` with every covered place (and the given spans) replaced by one bar per merged run. */
  apply(s: string, spans?: readonly Span[]): string;
}

/** A cover for these words (the texts under redactions); words that fold to nothing are dropped. */
export function makeCover(words: Iterable<string>): Cover {
  const set = new Set<string>();
  for (const w of words) for (const n of needlesOf(w)) set.add(n);
  const needles = [...set].sort((a, b) => b.length - a.length);
  const find = (s: string): Span[] => {
    if (!needles.length || !s) return [];
    // Most strings hold no covered word: a cheap look first (the same fold, without the index map, for the
    // printable ASCII that most text is), and the full fold only where a needle may be.
    if (ASCII.test(s)) {
      const quick = s.toLowerCase().replace(ASCII_BREAKS, ' ');
      if (!needles.some((n) => quick.includes(n))) return [];
    }
    const f = fold(s);
    const hits: Span[] = [];
    for (const needle of needles) {
      for (let at = f.text.indexOf(needle); at >= 0; at = f.text.indexOf(needle, at + 1)) {
        hits.push({ start: f.from[at]!, end: f.to[at + needle.length - 1]! });
      }
    }
    return mergeSpans(hits, s.length);
  };
  return {
    needles,
    find,
    apply(s, spans = []) {
      const all = spans.length ? [...find(s), ...spans] : find(s);
      return all.length ? applySpans(s, all) : s;
    },
  };
}

/** `text` with each merged run of `spans` replaced by one fixed-width bar. */
export function applySpans(text: string, spans: readonly Span[]): string {
  let out = '';
  let at = 0;
  for (const span of mergeSpans(spans, text.length)) {
    out += text.slice(at, span.start) + REDACTION_BAR;
    at = span.end;
  }
  return out + text.slice(at);
}
