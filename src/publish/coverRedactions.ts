import { flattenText } from '../parts/index.ts';
import { type Choices, coveredWords, type Span } from '../redaction/index.ts';
import type { Loaded } from './plan.ts';
import type { Draft } from './store.ts';

// The redactions a refused publish adds at once (ADR 0090): coverAtOnce.ts's, apart for its length.

/** A turn may hold at most this many redactions (the request's own bound): more are not added. */
const MAX_REDACTIONS = 500;

/** Each turn's redactions with the request's new ones added, and their words; turns that would pass the bound. */
export function newRedactions(
  loaded: Loaded & { draft: Draft },
  request: Choices,
  elsewhere: readonly { id: string; text: string }[],
) {
  const { draft, turns } = loaded;
  const texts = new Map([
    ...elsewhere.map((t) => [t.id, t.text] as const),
    ...turns.map((t) => [t.messageId, flattenText(t.parts)] as const),
  ]);
  const redactions: Record<string, Span[]> = {};
  const words: Record<string, string[]> = {};
  let tooMany = 0;
  for (const [id, choice] of Object.entries(request)) {
    const text = texts.get(id);
    const had = draft.choices[id]?.redactions ?? [];
    const all = text === undefined ? had : union(had, choice.redactions ?? [], text.length);
    if (all.length === had.length) continue;
    if (all.length > MAX_REDACTIONS) tooMany++;
    else {
      redactions[id] = all;
      words[id] = coveredWords(text!, all);
    }
  }
  return { redactions, words, tooMany };
}

/** Spans of both clamped to the text, each once, in the order first given (each selection's words cover alone). */
function union(had: readonly Span[], more: readonly Span[], length: number): Span[] {
  const key = (s: Span) => `${s.start}:${s.end}`;
  const seen = new Set(had.map(key));
  const out = [...had];
  for (const s of more) {
    const span = { start: Math.min(s.start, length), end: Math.min(s.end, length) };
    if (span.end <= span.start || seen.has(key(span))) continue;
    seen.add(key(span));
    out.push(span);
  }
  return out;
}
