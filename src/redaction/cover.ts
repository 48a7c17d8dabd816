import { mergeSpans, REDACTION_BAR, type Span } from './spans.ts';

/**
 * The covering pass: a covered word is covered everywhere. Matching is on a folded form of both sides, so
 * what a reader would recognise as the same word is caught: compatibility forms (full-width letters,
 * ligatures), accents, case (including ß/SS), dashes and apostrophes of every kind, invisible format
 * characters and runs of white space.
 * Matching is by substring, not whole words: covering too much is visible in the preview; too little leaks.
 */

/** A string folded for matching, with the original [start, end) of each folded code unit. */
interface Folded {
  text: string;
  from: number[];
  to: number[];
}

const ASCII = /^[\t\n\r\x20-\x7e]*$/;
const SPACE = /\s/u;
const MARKS_AND_FORMAT = /[\p{Mn}\p{Cf}]/gu;
const DASHES = /[\p{Pd}\u2212]/gu;
const QUOTES = /[\u2018\u2019\u201a\u201b\u2032\u02bc\uff07]/gu;
const EDGES = /^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu;
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** How one grapheme reads, for matching. */
const foldGrapheme = (g: string) =>
  g
    .normalize('NFKD')
    .replace(MARKS_AND_FORMAT, '')
    .replace(DASHES, '-')
    .replace(QUOTES, "'")
    .toUpperCase()
    .toLowerCase()
    .normalize('NFC');

function fold(s: string): Folded {
  const from: number[] = [];
  const to: number[] = [];
  let text = '';
  const emit = (unit: string, start: number, end: number) => {
    text += unit;
    for (let k = 0; k < unit.length; k++) {
      from.push(start);
      to.push(end);
    }
  };
  let space = false;
  if (ASCII.test(s)) {
    // Printable ASCII (most text): one code unit each, no segmentation needed.
    for (let i = 0; i < s.length; i++) {
      const c = s[i]!;
      if (c === ' ' || c === '\n' || c === '\t' || c === '\r') {
        if (space) {
          to[to.length - 1] = i + 1;
          continue;
        }
        space = true;
        emit(' ', i, i + 1);
      } else {
        space = false;
        emit(c.toLowerCase(), i, i + 1);
      }
    }
    return { text, from, to };
  }
  for (const { segment, index } of segmenter.segment(s)) {
    const end = index + segment.length;
    if (SPACE.test(segment)) {
      if (space) to[to.length - 1] = end;
      else emit(' ', index, end);
      space = true;
      continue;
    }
    const f = foldGrapheme(segment);
    if (!f) {
      // Invisible on its own (a zero-width joiner, a stray mark): joins whatever it sits between.
      if (to.length) to[to.length - 1] = end;
      continue;
    }
    space = false;
    emit(f, index, end);
  }
  return { text, from, to };
}

/** The words a span covers, as a needle: folded, without the white space and punctuation at its edges. */
export function needleOf(words: string): string | null {
  const n = fold(words).text.replace(EDGES, '');
  return n.length ? n : null;
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
  for (const w of words) {
    const n = needleOf(w);
    if (n) set.add(n);
  }
  const needles = [...set].sort((a, b) => b.length - a.length);
  const find = (s: string): Span[] => {
    if (!needles.length || !s) return [];
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
