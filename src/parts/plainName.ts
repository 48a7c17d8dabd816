/**
 * A name as people see it (an upload's file name, an NPC's name, a Conversation's title): no control characters
 * and no bidirectional overrides, embeddings or isolates — `ev\u202Egnp.html` showed as `evlmth.png` (issue 25) —
 * nor invisible zero-width characters. Line breaks, tabs and separators become spaces; the result is trimmed.
 * Joiners (U+200C, U+200D) stay: emoji sequences and some scripts need them. Pure.
 */
// Tab, line feed, vertical tab, form feed, carriage return, NEL, line and paragraph separators: spaces.
const BREAKS = /[\t\n\v\f\r\u0085\u2028\u2029]/gu;
// Every other control (C0, DEL, C1); the bidi controls (ALM, LRM, RLM, LRE–RLO, LRI–PDI); zero-width space, word
// joiner, invisible operators and the byte-order mark: removed.
const HIDDEN = /[\p{Cc}\u061C\u200B\u200E\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/gu;

export function plainName(name: string): string {
  return name.replace(BREAKS, ' ').replace(HIDDEN, '').trim();
}
