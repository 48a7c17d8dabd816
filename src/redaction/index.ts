// redaction/: what a Player covers before publishing, the covering pass, and the preview the editor is shown.
// Pure; imported by the server's publish projection and by the browser's publish editor, so the preview and
// the records cannot disagree.
export {
  AgentChoice,
  AgentChoices,
  Choices,
  coverBounds,
  coveredWords,
  coverOf,
  extraPlaces,
  MAX_COVERED_CHARS,
  MAX_REDACTIONS,
  redactionCount,
  TurnChoice,
} from './choices.ts';
export { applySpans, type Cover, makeCover, needlesOf } from './cover.ts';
export { withoutDirection } from './direction.ts';
export type { Preview, Problem } from './preview.ts';
export { mergeSpans, REDACTION_BAR, Span } from './spans.ts';
