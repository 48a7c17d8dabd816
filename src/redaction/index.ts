// redaction/: what a Player covers before publishing, and the covering pass. Pure; imported by the server's
// publish projection and by the browser's publish editor, so the preview and the records cannot disagree.
export { Choices, coveredWords, coverOf, extraPlaces, TurnChoice } from './choices.ts';
export { applySpans, type Cover, makeCover, needlesOf } from './cover.ts';
export { mergeSpans, REDACTION_BAR, Span } from './spans.ts';
